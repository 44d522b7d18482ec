//! Links: the named edges from a group to its members, whatever storage holds them
//! (symbol table, compact link messages, or dense fractal-heap storage).

/// Where a link points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkTarget {
    /// Address of the target's object header.
    Hard(u64),
    /// A path in this file, resolved when followed.
    Soft(String),
    /// An object in another file.
    External { file: String, path: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub name: String,
    pub target: LinkTarget,
    /// Creation order, when the group tracks it.
    pub creation_order: Option<u64>,
}
