//! The test stage: PyTorch's own test suite (test/run_test.py) and the built-in GPU smoke suite
//! against wheels installed from the index under test.

pub mod skips;
