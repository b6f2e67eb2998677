//! A checked-out project as a list of repositories: the root and every submodule that is
//! checked out, recursively, in pre-order (parents before children).

use std::path::{Path, PathBuf};

use crate::git::local::{self, Gitlink};

#[derive(Clone, Debug)]
pub struct Node {
    /// Path relative to the project root; empty for the root.
    pub rel: String,
    pub dir: PathBuf,
    /// The commit the parent records for this submodule (the root: its checked-out commit).
    pub recorded: String,
    /// Gitlinks of this repository's HEAD (its own submodules).
    pub gitlinks: Vec<Gitlink>,
}

impl Node {
    pub fn label(&self) -> &str {
        if self.rel.is_empty() { "." } else { &self.rel }
    }

    /// Paths of this repository's own gitlinks (relative to it), for pathspec excludes.
    pub fn gitlink_paths(&self) -> Vec<String> {
        self.gitlinks.iter().map(|g| g.path.clone()).collect()
    }
}

/// Lists the root and, with `recurse`, every checked-out submodule below it.
pub fn discover(root: &Path, recurse: bool) -> anyhow::Result<Vec<Node>> {
    let mut nodes = Vec::new();
    let repo = local::open(root)?;
    let head = local::head_commit(&repo)
        .map(|c| c.to_string())
        .unwrap_or_default();
    visit(&mut nodes, root, String::new(), head, recurse)?;
    Ok(nodes)
}

fn visit(
    nodes: &mut Vec<Node>,
    dir: &Path,
    rel: String,
    recorded: String,
    recurse: bool,
) -> anyhow::Result<()> {
    let repo = local::open(dir)?;
    let gitlinks = match local::head_commit(&repo) {
        Some(head) => local::gitlinks_at(&repo, head)?,
        None => Vec::new(),
    };
    let children: Vec<Gitlink> = if recurse {
        gitlinks.clone()
    } else {
        Vec::new()
    };
    nodes.push(Node {
        rel: rel.clone(),
        dir: dir.to_path_buf(),
        recorded,
        gitlinks,
    });
    for link in children {
        let child_dir = dir.join(&link.path);
        // A submodule that is not initialised has no .git of its own: nothing to visit.
        if !child_dir.join(".git").exists() {
            continue;
        }
        let child_rel = if rel.is_empty() {
            link.path.clone()
        } else {
            format!("{rel}/{}", link.path)
        };
        visit(nodes, &child_dir, child_rel, link.commit, recurse)?;
    }
    Ok(())
}

/// Resolves a submodule URL relative to its superproject's URL, as git does for `../x.git`.
pub fn resolve_submodule_url(parent: &str, url: &str) -> String {
    if !(url.starts_with("./") || url.starts_with("../")) {
        return url.to_string();
    }
    let mut base = parent.trim_end_matches('/').to_string();
    let mut rest = url;
    loop {
        if let Some(stripped) = rest.strip_prefix("./") {
            rest = stripped;
        } else if let Some(stripped) = rest.strip_prefix("../") {
            if let Some(index) = base.rfind('/') {
                base.truncate(index);
            }
            rest = stripped;
        } else {
            break;
        }
    }
    format!("{base}/{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_submodule_urls() {
        assert_eq!(
            resolve_submodule_url("https://github.com/pytorch/pytorch.git", "../kineto.git"),
            "https://github.com/pytorch/kineto.git"
        );
        assert_eq!(
            resolve_submodule_url("file:///o/torch.git", "./sub.git"),
            "file:///o/torch.git/sub.git"
        );
        assert_eq!(
            resolve_submodule_url("file:///o/torch.git", "https://x/y.git"),
            "https://x/y.git"
        );
        assert_eq!(
            resolve_submodule_url("/o/a/torch.git", "../../b/c.git"),
            "/o/b/c.git"
        );
    }
}
