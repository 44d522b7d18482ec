//! Following references: object references to the object they name (with a path to
//! it, as libhdf5 names dereferenced objects), region references to their dataset
//! and selection.

use super::{File, Object, ObjectKind};
use crate::error::{Result, ResultExt};
use crate::format::links::LinkTarget;
use crate::format::reference::{self, Region};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

impl File {
    /// The object an object reference points to. Its name is a path to it, the one
    /// libhdf5 gives (None when no hard link reaches it); errors for an address that
    /// holds no object header name the reference and the file. The paths of all
    /// objects are worked out by one walk of the file, on the first dereference, and
    /// kept: a walk per reference costs the whole file each time (17 ms per
    /// reference with 15,000 objects).
    pub fn dereference(&self, address: u64) -> Result<(Object, Option<String>)> {
        let label = format!("object reference to address {}", address);
        let obj = self.object_at(address, label.clone())?;
        let path = self.object_paths().in_object(&label).in_file(self.path())?.get(&address).cloned();
        let name = path.clone().unwrap_or(label);
        Ok((Object { name, ..obj }, path))
    }

    /// The dataset address and selection a region reference (a global heap id) names.
    pub fn region(&self, collection: u64, index: u32) -> Result<Region> {
        self.check_open()?;
        reference::read_region(self.ctx(), self.global_heap(), collection, index)
            .map_err(|e| e.in_object(format!("region reference (heap collection {}, object {})", collection, index)).in_file(self.path()))
    }

    /// The path of every object reached by hard links, built once per file.
    fn object_paths(&self) -> Result<Arc<HashMap<u64, String>>> {
        self.check_open()?;
        // Held while walking: threads dereferencing at once wait for one walk, not do
        // one each.
        let mut paths = self.inner.object_paths.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(known) = paths.as_ref() {
            return Ok(known.clone());
        }
        let walked = Arc::new(self.walk_paths()?);
        *paths = Some(walked.clone());
        Ok(walked)
    }

    /// For each object, the first path met when visiting the groups depth first, each
    /// in its storage order, as libhdf5 names a dereferenced object
    /// (H5G_get_name_by_addr), so names agree with h5py's. Groups reached twice are
    /// visited once; unreadable objects are not entered (libhdf5 would fail the name;
    /// the object itself may be fine).
    fn walk_paths(&self) -> Result<HashMap<u64, String>> {
        let root = self.root()?;
        let mut paths = HashMap::from([(root.address(), "/".to_string())]);
        let mut visited = HashSet::from([root.address()]);
        // Each entry: a group and its links not yet visited (reversed, to pop in order).
        let mut stack = vec![(root.clone(), reversed(root.native_links()?))];
        while let Some((group, links)) = stack.last_mut() {
            let Some(link) = links.pop() else {
                stack.pop();
                continue;
            };
            let LinkTarget::Hard(child) = link.target else { continue };
            let path = group.child_path(&link.name);
            paths.entry(child).or_insert_with(|| path.clone());
            if visited.insert(child) {
                // An object whose header or links cannot be read is a leaf here: a
                // broken object elsewhere must not make every reference fail.
                let Ok(obj) = self.object_at(child, path) else { continue };
                if obj.kind() == ObjectKind::Group {
                    if let Ok(links) = obj.native_links() {
                        stack.push((obj, reversed(links)));
                    }
                }
            }
        }
        self.check_open()?; // closed meanwhile: the walk may have skipped everything
        Ok(paths)
    }
}

fn reversed<T>(mut v: Vec<T>) -> Vec<T> {
    v.reverse();
    v
}

