//! Group membership: links from any of the three storages, in h5py's order.

use super::{Object, ObjectKind, Walk};
use crate::error::{Error, ErrorKind, Result, ResultExt};
use crate::format::links::{dense_link, dense_link_count, dense_links, parse_link_message, Link, LinkInfo, LinkTarget};
use crate::format::local_heap::LocalHeap;
use crate::format::names::sort_by_stored_name;
use crate::format::object_header::msg;
use crate::format::symbol_table::{symbol_table_is_one_node, symbol_table_link, symbol_table_links};
use std::collections::HashMap;
use std::sync::Arc;

/// Names looked up by themselves in a group before its links are read whole. A
/// lookup reads the few index nodes on its way (libhdf5's way: a group of 50,000
/// members listed whole for one name took 14-23 ms); the whole list, once read,
/// answers every later lookup from memory.
const LOOKUPS_BEFORE_LISTING: u32 = 16;

/// Dense link storage up to this many links is listed rather than looked into.
const FEW_LINKS: u64 = 64;

/// A name looked up in a group's own index, or the group is better listed.
enum LinkLookup {
    Done(Option<Link>),
    ListInstead,
}

/// A group's links in iteration order, with a name index.
pub(crate) struct GroupLinks {
    links: Vec<Link>,
    by_name: HashMap<String, usize>,
}

impl GroupLinks {
    pub(crate) fn new(links: Vec<Link>) -> Self {
        let by_name = links.iter().enumerate().map(|(i, l)| (l.name.clone(), i)).collect();
        GroupLinks { links, by_name }
    }

    fn get(&self, name: &str) -> Option<&Link> {
        self.by_name.get(name).map(|&i| &self.links[i])
    }
}

impl Object {
    /// The group's links: creation order when the group tracks it, else name order
    /// (what h5py iterates).
    pub fn links(&self) -> Result<Vec<Link>> {
        Ok(self.cached_links()?.links.clone())
    }

    /// How many links the group has (h5py's len): the links' count once they are
    /// listed; for dense storage the name index's record count, as libhdf5's
    /// H5Gget_info answers, without reading 50,000 names to count them.
    pub fn link_count(&self) -> Result<usize> {
        if let Some(links) = self.file.listed_links(&self.header) {
            return Ok(links.links.len());
        }
        if let Some(count) = self.dense_link_count().in_object(&self.name).in_file(self.file.path())? {
            return Ok(count);
        }
        Ok(self.cached_links()?.links.len())
    }

    /// The link count of a new-style group with dense storage; None for other groups.
    fn dense_link_count(&self) -> Result<Option<usize>> {
        self.file.check_open()?;
        if self.symbol_table()?.is_some() {
            return Ok(None);
        }
        let Some(m) = self.header.find(msg::LINK_INFO) else { return Ok(None) };
        let ctx = self.file.ctx();
        let info = LinkInfo::parse(&m.data, m.address, ctx.sizes())?;
        if info.heap_address.is_none() {
            return Ok(None); // compact: the link messages, listed cheaply
        }
        let dense = usize::try_from(dense_link_count(ctx, &info)?)
            .map_err(|_| Error::format("the dense link index counts more links than addresses"))?;
        Ok(Some(dense + self.header.all(msg::LINK).count()))
    }

    fn cached_links(&self) -> Result<Arc<GroupLinks>> {
        self.file.check_open()?;
        self.file
            .group_links(&self.header, || self.read_links())
            .in_object(&self.name)
            .in_file(self.file.path())
    }

    fn read_links(&self) -> Result<Vec<Link>> {
        let (mut links, by_creation) = self.stored_links()?;
        if by_creation && links.iter().all(|l| l.creation_order.is_some()) {
            links.sort_by_key(|l| l.creation_order);
        } else {
            sort_by_stored_name(&mut links, |l| &l.name);
        }
        Ok(links)
    }

    /// The group's links in storage order (libhdf5's "native" order: symbol table
    /// name order, link messages in header order, dense storage in name-index order).
    pub(crate) fn native_links(&self) -> Result<Vec<Link>> {
        self.file.check_open()?;
        self.stored_links().map(|(links, _)| links).in_object(&self.name).in_file(self.file.path())
    }

    /// The B-tree and local heap addresses of an old-style group (None for a new-style
    /// one); an error when this is no group.
    fn symbol_table(&self) -> Result<Option<(u64, u64)>> {
        if self.kind() != ObjectKind::Group {
            return Err(Error::invalid_argument(format!("'{}' is not a group", self.name)));
        }
        let Some(m) = self.header.find(msg::SYMBOL_TABLE) else { return Ok(None) };
        let mut r = m.reader(self.file.ctx());
        Ok(Some((r.required_address("group B-tree")?, r.required_address("group local heap")?)))
    }

    /// The links as stored, and whether the group tracks creation order.
    fn stored_links(&self) -> Result<(Vec<Link>, bool)> {
        let ctx = self.file.ctx();
        if let Some((btree, heap)) = self.symbol_table()? {
            return Ok((symbol_table_links(ctx, btree, heap)?, false));
        }
        let mut links = Vec::new();
        for m in self.header.all(msg::LINK) {
            links.push(parse_link_message(&m.data, m.address, ctx.sizes())?);
        }
        let mut by_creation = false;
        if let Some(m) = self.header.find(msg::LINK_INFO) {
            let info = LinkInfo::parse(&m.data, m.address, ctx.sizes())?;
            by_creation = info.creation_order_tracked;
            links.extend(dense_links(ctx, &info)?);
        }
        Ok((links, by_creation))
    }

    /// The link named `name` (one path component).
    pub fn link(&self, name: &str) -> Result<Link> {
        self.find_link(name)?.ok_or_else(|| {
            Error::not_found(format!("no object named '{}' in '{}'", name, self.name)).in_file(self.file.path())
        })
    }

    fn find_link(&self, name: &str) -> Result<Option<Link>> {
        if let Some(links) = self.file.listed_links(&self.header) {
            return Ok(links.get(name).cloned());
        }
        if self.file.count_lookup(&self.header) <= LOOKUPS_BEFORE_LISTING {
            let found = self.look_up_stored_link(name).in_object(&self.name).in_file(self.file.path())?;
            if let LinkLookup::Done(found) = found {
                return Ok(found);
            }
        }
        Ok(self.cached_links()?.get(name).cloned())
    }

    /// `name` looked up in the group's symbol table or dense link storage. Small
    /// groups are better listed (once, then kept): those whose links are in the object
    /// header, whose symbol table is one B-tree node, or whose dense storage holds at
    /// most FEW_LINKS links.
    fn look_up_stored_link(&self, name: &str) -> Result<LinkLookup> {
        self.file.check_open()?;
        let ctx = self.file.ctx();
        if let Some((btree, heap)) = self.symbol_table()? {
            if symbol_table_is_one_node(ctx, btree)? {
                return Ok(LinkLookup::ListInstead);
            }
            return symbol_table_link(ctx, btree, &LocalHeap::read(ctx, heap)?, name).map(LinkLookup::Done);
        }
        if self.header.all(msg::LINK).next().is_some() {
            return Ok(LinkLookup::ListInstead);
        }
        let Some(m) = self.header.find(msg::LINK_INFO) else { return Ok(LinkLookup::Done(None)) };
        let info = LinkInfo::parse(&m.data, m.address, ctx.sizes())?;
        if dense_link_count(ctx, &info)? <= FEW_LINKS {
            return Ok(LinkLookup::ListInstead);
        }
        dense_link(ctx, &info, name).map(LinkLookup::Done)
    }

    /// Follow one link (soft links resolved, external links reported).
    pub fn child(&self, name: &str) -> Result<Object> {
        self.child_following(name, Walk { hops: 0, external: false })
    }

    /// Follow one link, external links into their files too (see
    /// `File::get_following_external`).
    pub fn child_following_external(&self, name: &str) -> Result<Object> {
        self.child_following(name, Walk { hops: 0, external: true })
    }

    pub(super) fn child_following(&self, name: &str, walk: Walk) -> Result<Object> {
        if name == "." {
            return Ok(self.clone());
        }
        let link = self.link(name)?;
        let path = self.child_path(name);
        match link.target {
            LinkTarget::Hard(address) => self.file.object_at(address, path),
            LinkTarget::Soft(target) if target.is_empty() => {
                // libhdf5 refuses it ("invalid link length"): it names nothing, not the group
                Err(Error::not_found(format!("soft link '{}' has an empty value and leads nowhere", path)).in_file(self.file.path()))
            }
            LinkTarget::Soft(target) => {
                let absolute = if target.starts_with('/') {
                    target
                } else {
                    format!("{}/{}", self.name.trim_end_matches('/'), target)
                };
                self.file.resolve(&absolute, walk.next_hop()).map_err(|e| {
                    if e.kind() == crate::error::ErrorKind::NotFound {
                        Error::not_found(format!("soft link '{}' points to '{}', which does not exist", path, absolute))
                            .in_file(self.file.path())
                    } else {
                        e
                    }
                })
            }
            LinkTarget::External { file, path: target } if walk.external => {
                self.follow_external(&path, &file, &target, walk.next_hop())
            }
            LinkTarget::Unreadable { problem, .. } => {
                Err(Error::not_found(format!("link '{}' cannot be followed: {}", path, problem)).in_file(self.file.path()))
            }
            LinkTarget::External { file, path: target } => Err(Error::unsupported(format!(
                "'{}' is an external link to '{}' in file '{}'; external links are not followed",
                path, target, file
            ))
            .in_file(self.file.path())),
        }
    }

    /// The object external link `path` names: `target` in the file `file_name` (this
    /// same file when the name finds it).
    fn follow_external(&self, path: &str, file_name: &str, target: &str, walk: Walk) -> Result<Object> {
        // each link once: round a loop of links the same hops came back 16 times
        let link = |e: Error| {
            let context = format!("external link '{}' to '{}' in '{}'", path, target, file_name);
            if e.message().contains(&context) { e } else { e.context(context) }
        };
        let found = self.file.external_link_file(file_name).map_err(link)?;
        // opened once per file; a target that is no HDF5 file (or not one we can open)
        // breaks the link, as libhdf5's traversal fails: a KeyError to h5py, so get()
        // gives None and `in` False
        let file = self.file.link_target(&found).map_err(|e| link(unopenable_target(e, &found)))?;
        let absolute = if target.starts_with('/') { target.to_string() } else { format!("/{}", target) };
        file.resolve(&absolute, walk).map_err(link)
    }
}

/// Opening an external link's target file failed: the link leads nowhere (NotFound),
/// with why in the message.
fn unopenable_target(e: Error, found: &std::path::Path) -> Error {
    match e.kind() {
        ErrorKind::Io | ErrorKind::Format => {
            Error::not_found(format!("its target file '{}' cannot be opened as HDF5: {}", found.display(), e))
        }
        _ => e,
    }
}
