//! Attributes: compact (in the header) and dense (fractal heap), in h5py's order.

use super::Object;
use crate::error::{Error, Result, ResultExt};
use crate::format::attribute::{Attribute, AttributeDatatype};
use crate::format::attribute_info::{
    attribute_message_name, dense_attribute_message, dense_attribute_messages, dense_attribute_messages_by_creation_order,
    AttributeInfo,
};
use super::File;
use crate::format::dataspace::{Dataspace, DataspaceKind};
use crate::convert::values::{self, VlenValue};
use crate::format::datatype::Datatype;
use crate::format::shared::SharedMessage;
use crate::format::object_header::{msg, ObjectHeader};
use crate::format::FormatContext;
use std::collections::HashMap;

/// One attribute, its type resolved, its raw bytes as stored.
pub struct AttributeValue {
    pub name: String,
    pub datatype: Datatype,
    pub dataspace: Dataspace,
    pub raw: Vec<u8>,
}

impl AttributeValue {
    /// Elements in the attribute (1 for a scalar, 0 for a null dataspace).
    pub fn len(&self) -> Result<usize> {
        if self.dataspace.kind == DataspaceKind::Null {
            return Ok(0);
        }
        usize::try_from(self.dataspace.num_elements()?).map_err(|_| Error::format("attribute too large"))
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The value in the numpy layout of its dtype (types without vlen parts).
    pub fn numpy_bytes(&self) -> Result<Vec<u8>> {
        let n = self.len()?;
        self.check_size(n)?;
        values::to_numpy_bytes(&self.datatype, &self.raw, n)
    }

    /// The values of a type with variable-length parts, resolved from the global heap.
    pub fn vlen_values(&self, file: &File) -> Result<Vec<VlenValue>> {
        let n = self.len()?;
        self.check_size(n)?;
        values::resolve_vlen_elements(file.ctx(), file.global_heap(), &self.datatype, &self.raw, n)
    }

    fn check_size(&self, n: usize) -> Result<()> {
        let need = n.checked_mul(self.datatype.size());
        if need.map_or(true, |b| b > self.raw.len()) {
            return Err(Error::format(format!(
                "attribute '{}' holds {} bytes, {} elements of {} bytes need more",
                self.name,
                self.raw.len(),
                n,
                self.datatype.size()
            )));
        }
        Ok(())
    }
}

/// Attributes up to which a name is found by scanning the list: a fast5 read's objects
/// hold a handful each, and building an index for them would cost more than it saves.
const SCANNED_ATTRIBUTES: usize = 16;

/// Lookups by name on an object with more attributes than that, each finding its one
/// attribute alone, before they are all parsed once (a loop over every name).
const LOOKUPS_BEFORE_PARSING: usize = 16;

/// An object's attributes: parsed on first use and kept (the file is read-only, and
/// reading every attribute by name would otherwise parse all of them once per name),
/// and the lookups made before that. Shared by the clones of the object.
#[derive(Default)]
pub(crate) struct AttributeCache {
    parsed: std::sync::OnceLock<ParsedAttributes>,
    lookups: std::sync::atomic::AtomicUsize,
}

/// An object's attributes as parsed, in h5py's order, and (for many) where each name
/// is: an object may hold tens of thousands, looked up one by one.
#[derive(Default)]
pub(crate) struct ParsedAttributes {
    list: Vec<Attribute>,
    by_name: Option<HashMap<String, usize>>,
}

impl ParsedAttributes {
    fn new(list: Vec<Attribute>) -> Self {
        let by_name = (list.len() > SCANNED_ATTRIBUTES).then(|| {
            let mut by_name = HashMap::with_capacity(list.len());
            for (i, a) in list.iter().enumerate() {
                by_name.entry(a.name.clone()).or_insert(i); // a damaged file's repeat: the first
            }
            by_name
        });
        ParsedAttributes { list, by_name }
    }

    fn get(&self, name: &str) -> Option<&Attribute> {
        match &self.by_name {
            Some(by_name) => by_name.get(name).map(|&i| &self.list[i]),
            None => self.list.iter().find(|a| a.name == name),
        }
    }
}

impl Object {
    /// Attribute names: creation order when tracked, else name order (as h5py).
    pub fn attribute_names(&self) -> Result<Vec<String>> {
        Ok(self.attributes()?.list.iter().map(|a| a.name.clone()).collect())
    }

    /// How many attributes the object has (without building their names).
    pub fn attribute_count(&self) -> Result<usize> {
        Ok(self.attributes()?.list.len())
    }

    pub fn has_attribute(&self, name: &str) -> Result<bool> {
        if let Some(found) = self.looked_up(name)? {
            return Ok(found.is_some());
        }
        Ok(self.attributes()?.get(name).is_some())
    }

    pub fn attribute(&self, name: &str) -> Result<AttributeValue> {
        let not_found = || Error::not_found(format!("no attribute '{}' on '{}'", name, self.name)).in_file(self.file.path());
        if let Some(found) = self.looked_up(name)? {
            return self.resolve(&found.ok_or_else(not_found)?);
        }
        let attr = self.attributes()?.get(name).ok_or_else(not_found)?;
        self.resolve(attr)
    }

    /// The attribute `name` found alone, without parsing the others: for an object
    /// with many attributes not parsed yet, the first LOOKUPS_BEFORE_PARSING lookups
    /// (one attribute of a dataset with 10,000 took 7.7 ms, h5py 0.05 ms); after that,
    /// or for a few attributes, None: the caller parses them all once, and keeps them.
    fn looked_up(&self, name: &str) -> Result<Option<Option<Attribute>>> {
        self.file.check_open()?;
        if self.attributes.parsed.get().is_some() {
            return Ok(None);
        }
        let info = self.header.find(msg::ATTRIBUTE_INFO);
        let (compact, shared) = self.header.all(msg::ATTRIBUTE).fold((0, false), |(n, shared), m| (n + 1, shared || m.is_shared()));
        // shared messages (their bodies elsewhere) are left to the full parse
        if (info.is_none() && compact <= SCANNED_ATTRIBUTES) || shared {
            return Ok(None);
        }
        if self.attributes.lookups.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= LOOKUPS_BEFORE_PARSING {
            return Ok(None);
        }
        self.find_attribute(name, info).in_object(&self.name).in_file(self.file.path()).map(Some)
    }

    /// The attribute `name` among the compact messages (only their names read), then in
    /// dense storage (one descent of the name index).
    fn find_attribute(&self, name: &str, info: Option<&crate::format::object_header::HeaderMessage>) -> Result<Option<Attribute>> {
        let ctx = self.file.ctx();
        let parse = |data: &[u8], address: u64| Attribute::parse_with(data, address, ctx.sizes(), &|t, id| ctx.shared_message(t, id));
        let wanted = crate::format::names::stored_bytes(name);
        let mut compact: Vec<_> = self.header.all(msg::ATTRIBUTE).collect();
        compact.sort_by_key(|m| m.creation_order); // the first of a damaged file's repeats, as the list
        for m in compact {
            if attribute_message_name(&m.data, m.address, ctx.sizes())? == &wanted[..] {
                return parse(&m.data, m.address).map(Some);
            }
        }
        let Some(m) = info else { return Ok(None) };
        let info = AttributeInfo::parse(&m.data, m.address, ctx.sizes())?;
        match dense_attribute_message(ctx, &info, &wanted)? {
            Some((data, address)) => parse(&data, address).map(Some),
            None => Ok(None),
        }
    }

    /// Every attribute, in `attribute_names` order.
    pub fn all_attributes(&self) -> Result<Vec<AttributeValue>> {
        self.attributes()?.list.iter().map(|a| self.resolve(a)).collect()
    }

    /// The attribute with its datatype resolved (committed types read) and its data
    /// cut to the value's size. The error's object name is made only on failure: fast5
    /// readers resolve a dozen attributes per read.
    fn resolve(&self, attr: &Attribute) -> Result<AttributeValue> {
        let ctx = self.file.ctx();
        let (datatype, len) = match &attr.datatype {
            AttributeDatatype::Inline(dt) => Ok(dt.clone()),
            AttributeDatatype::Shared(shared) => committed_datatype(ctx, shared),
        }
        .and_then(|dt| attr.value_len(&dt).map(|len| (dt, len)))
        .map_err(|e| e.in_object(format!("{} (attribute '{}')", self.name, attr.name)).in_file(self.file.path()))?;
        let raw = attr.data[..len].to_vec(); // value_len checked len <= data.len()
        Ok(AttributeValue { name: attr.name.clone(), datatype, dataspace: attr.dataspace.clone(), raw })
    }

    /// The attributes, parsed once per object (a failure is not kept: asking again
    /// reports it again).
    fn attributes(&self) -> Result<&ParsedAttributes> {
        self.file.check_open()?;
        if let Some(attrs) = self.attributes.parsed.get() {
            return Ok(attrs);
        }
        let attrs = self.read_attributes().in_object(&self.name).in_file(self.file.path())?;
        Ok(self.attributes.parsed.get_or_init(|| ParsedAttributes::new(attrs)))
    }

    fn read_attributes(&self) -> Result<Vec<Attribute>> {
        let ctx = self.file.ctx();
        let mut compact: Vec<_> = self.header.all(msg::ATTRIBUTE).collect();
        compact.sort_by_key(|m| m.creation_order); // stable: header order without indexes
        let mut attrs = Vec::new();
        for m in compact {
            attrs.push(Attribute::parse_with(&m.data, m.address, ctx.sizes(), &|t, id| ctx.shared_message(t, id))?);
        }
        let by_creation = self.header.tracks_attribute_order();
        if let Some(m) = self.header.find(msg::ATTRIBUTE_INFO) {
            let info = AttributeInfo::parse(&m.data, m.address, ctx.sizes())?;
            // Tracked without an index of its own, the creation order is in the
            // name index's records (that function sorts by it).
            let dense = if by_creation && info.creation_order_tracked {
                dense_attribute_messages_by_creation_order(ctx, &info)?
            } else {
                dense_attribute_messages(ctx, &info)?
            };
            for (data, address) in dense {
                attrs.push(Attribute::parse_with(&data, address, ctx.sizes(), &|t, id| ctx.shared_message(t, id))?);
            }
        }
        // Compact attributes sit in the header in creation order, dense ones come in
        // the index order asked for. h5py lists by creation order only when tracked.
        if !by_creation {
            crate::format::names::sort_by_stored_name(&mut attrs, |a| &a.name);
        }
        Ok(attrs)
    }
}

/// The datatype stored in the committed datatype object a shared message points to.
pub(crate) fn committed_datatype(ctx: &FormatContext, shared: &SharedMessage) -> Result<Datatype> {
    let address = match shared {
        SharedMessage::ObjectHeader(address) => *address,
        SharedMessage::SharedHeap(id) => {
            let body = ctx.shared_message(crate::format::object_header::msg::DATATYPE, id)?;
            return Datatype::parse(&body, body.address(), ctx.sizes());
        }
    };
    let header = ObjectHeader::read(ctx, address)?;
    let m = header
        .find(msg::DATATYPE)
        .ok_or_else(|| Error::format("shared datatype points to an object without a datatype").at(address))?;
    if m.is_shared() {
        return Err(Error::format("committed datatype is itself shared (a cycle?)").at(m.address));
    }
    Datatype::parse(&m.data, m.address, ctx.sizes())
}
