//! Following references: object references to the object they name (with a path to
//! it, as libhdf5 names dereferenced objects), region references to their dataset
//! and selection.

use super::{File, Object, ObjectKind};
use crate::error::{Result, ResultExt};
use crate::format::links::LinkTarget;
use crate::format::reference::{self, Region};
use std::collections::HashSet;

impl File {
    /// The object an object reference points to. Its name is a path to it found by
    /// walking the hard links from the root (None when no link reaches it); errors for
    /// an address that holds no object header name the reference and the file.
    pub fn dereference(&self, address: u64) -> Result<(Object, Option<String>)> {
        let label = format!("object reference to address {}", address);
        let obj = self.object_at(address, label.clone())?;
        let path = self.path_to(address).in_object(&label).in_file(self.path())?;
        let name = path.clone().unwrap_or(label);
        Ok((Object { name, ..obj }, path))
    }

    /// The dataset address and selection a region reference (a global heap id) names.
    pub fn region(&self, collection: u64, index: u32) -> Result<Region> {
        self.check_open()?;
        reference::read_region(self.ctx(), self.global_heap(), collection, index)
            .in_object(&format!("region reference (heap collection {}, object {})", collection, index))
            .in_file(self.path())
    }

    /// A path from the root to the object at `address`: the first met when visiting
    /// the groups depth first, each in its storage order, as libhdf5 names a
    /// dereferenced object (H5G_get_name_by_addr), so names agree with h5py's.
    fn path_to(&self, address: u64) -> Result<Option<String>> {
        let root = self.root()?;
        if root.address() == address {
            return Ok(Some("/".to_string()));
        }
        let mut seen = HashSet::from([root.address()]);
        // Each entry: a group and its links not yet visited (reversed, to pop in order).
        let mut stack = vec![(root.clone(), reversed(root.native_links()?))];
        while let Some((group, links)) = stack.last_mut() {
            let Some(link) = links.pop() else {
                stack.pop();
                continue;
            };
            let LinkTarget::Hard(child) = link.target else { continue };
            let path = group.child_path(&link.name);
            if child == address {
                return Ok(Some(path));
            }
            if seen.insert(child) {
                let obj = self.object_at(child, path)?;
                if obj.kind() == ObjectKind::Group {
                    let links = reversed(obj.native_links()?);
                    stack.push((obj, links));
                }
            }
        }
        Ok(None)
    }
}

fn reversed<T>(mut v: Vec<T>) -> Vec<T> {
    v.reverse();
    v
}

