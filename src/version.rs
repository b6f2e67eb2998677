//! PEP 440 versions and suffix rules.
