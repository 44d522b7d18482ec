//! A compound with variable-length parts read field by field: each field's values for
//! every element in one column (numbers back to back, strings in one buffer), not a
//! tree of small buffers per element. Tables of names and numbers (AnnData's
//! record arrays, pandas tables) are read this way by every binding.

use super::values::{check_elements, in_blocks, Plan, Resolver, VlenValue};
use crate::buffer::vec_with_capacity;
use crate::error::{Error, Result};
use crate::format::context::FormatContext;
use crate::format::datatype::Datatype;
use crate::format::global_heap::GlobalHeapCache;

/// Variable-length strings back to back: string `i` is `data[ends[i - 1]..ends[i]]`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Strings {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl Strings {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// String `i` (None past the end).
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let start = if i == 0 { 0 } else { *self.ends.get(i - 1)? };
        self.data.get(start..*self.ends.get(i)?)
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or_default())
    }

    fn push(&mut self, text: &[u8]) -> Result<()> {
        // the text buffer grows with the strings: past what the allocator gives, an
        // error, not the host program aborted
        let total = self.data.len().saturating_add(text.len());
        if !crate::buffer::fits_in_memory::<u8>(total) {
            return Err(cannot_hold(total, "string bytes"));
        }
        self.data.try_reserve(text.len()).map_err(|_| cannot_hold(total, "string bytes"))?;
        self.data.extend_from_slice(text);
        self.ends.push(self.data.len());
        Ok(())
    }

    fn append(&mut self, other: Strings) {
        let base = self.data.len();
        self.data.extend_from_slice(&other.data);
        self.ends.extend(other.ends.into_iter().map(|end| end + base));
    }
}

/// One field's values for every element read.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// A field without variable-length parts: `itemsize` bytes a value in numpy
    /// layout (the stored byte order, as h5py gives it), back to back.
    Fixed { itemsize: usize, bytes: Vec<u8> },
    /// Variable-length strings (each up to its first NUL, as h5py gives them).
    Strings(Strings),
    /// A nested compound with variable-length parts: its fields' columns, in the
    /// order of its numpy fields.
    Compound(Vec<Column>),
    /// Any other field (sequences, references, arrays with variable-length parts):
    /// one value per element.
    Values(Vec<VlenValue>),
}

impl Column {
    /// An empty column with room for `rows` values of a field resolved by `plan`.
    fn for_plan(plan: &Plan, rows: usize) -> Result<Column> {
        Ok(match plan {
            Plan::String => Column::Strings(Strings { data: Vec::new(), ends: vec_with_capacity(rows, "the strings' ends")? }),
            Plan::Fixed(convert) => {
                let itemsize = convert.sizes().1;
                let bytes = rows.checked_mul(itemsize).ok_or_else(|| cannot_hold(usize::MAX, "column bytes"))?;
                Column::Fixed { itemsize, bytes: vec_with_capacity(bytes, "a column's values")? }
            }
            Plan::Compound(fields) => {
                Column::Compound(fields.iter().map(|(_, _, f)| Column::for_plan(f, rows)).collect::<Result<_>>()?)
            }
            _ => Column::Values(vec_with_capacity(rows, "a column's values")?),
        })
    }

    /// Room for the values of `more` (columns of the same field), so that appending
    /// them copies each byte once.
    fn reserve_for(&mut self, more: &[&Column]) -> Result<()> {
        fn room<T>(v: &mut Vec<T>, more: usize, what: &str) -> Result<()> {
            let total = v.len().saturating_add(more);
            if !crate::buffer::fits_in_memory::<T>(total) {
                return Err(cannot_hold(total, what));
            }
            v.try_reserve_exact(more).map_err(|_| cannot_hold(total, what))
        }
        match self {
            Column::Fixed { bytes, .. } => {
                room(bytes, more.iter().map(|c| if let Column::Fixed { bytes, .. } = c { bytes.len() } else { 0 }).sum(), "column bytes")
            }
            Column::Strings(strings) => {
                let texts = || more.iter().filter_map(|c| if let Column::Strings(s) = c { Some(s) } else { None });
                room(&mut strings.data, texts().map(|s| s.data.len()).sum(), "string bytes")?;
                room(&mut strings.ends, texts().map(|s| s.ends.len()).sum(), "strings")
            }
            Column::Compound(columns) => {
                for (k, column) in columns.iter_mut().enumerate() {
                    let fields: Vec<&Column> = more.iter().filter_map(|c| if let Column::Compound(f) = c { f.get(k) } else { None }).collect();
                    column.reserve_for(&fields)?;
                }
                Ok(())
            }
            Column::Values(values) => {
                room(values, more.iter().map(|c| if let Column::Values(v) = c { v.len() } else { 0 }).sum(), "column values")
            }
        }
    }

    /// The value of one element's field (its stored bytes `raw`) added at the end.
    fn push(&mut self, resolver: &mut Resolver, plan: &Plan, raw: &[u8]) -> Result<()> {
        match (self, plan) {
            (Column::Strings(strings), Plan::String) => strings.push(resolver.string_bytes(raw)?)?,
            (Column::Fixed { bytes, itemsize }, Plan::Fixed(convert)) => {
                let at = bytes.len();
                bytes.resize(at + *itemsize, 0);
                convert.convert(raw, &mut bytes[at..], 1)?;
            }
            (Column::Compound(columns), Plan::Compound(fields)) => {
                for (column, (offset, size, field)) in columns.iter_mut().zip(fields) {
                    let part = raw.get(*offset..offset + size).ok_or_else(|| Error::format("a compound member outside its element"))?;
                    column.push(resolver, field, part)?;
                }
            }
            (Column::Values(values), plan) => values.push(resolver.element(plan, raw)?),
            _ => return Err(Error::format("a column that does not match its field")),
        }
        Ok(())
    }

    /// A resolved value (from a read that gives values, such as a virtual dataset's)
    /// added at the end.
    fn push_value(&mut self, value: VlenValue) -> Result<()> {
        match (self, value) {
            (Column::Strings(strings), VlenValue::String(text)) => strings.push(&text)?,
            (Column::Fixed { bytes, itemsize }, VlenValue::Fixed(value)) if value.len() == *itemsize => bytes.extend_from_slice(&value),
            (Column::Compound(columns), VlenValue::Compound(fields)) if fields.len() == columns.len() => {
                for (column, field) in columns.iter_mut().zip(fields) {
                    column.push_value(field)?;
                }
            }
            (Column::Values(values), value) => values.push(value),
            _ => return Err(Error::format("a value that does not match its field")),
        }
        Ok(())
    }

    /// `other`'s values (a column of the same field) added at the end.
    fn append(&mut self, other: Column) -> Result<()> {
        match (self, other) {
            (Column::Fixed { bytes, .. }, Column::Fixed { bytes: more, .. }) => bytes.extend_from_slice(&more),
            (Column::Strings(strings), Column::Strings(more)) => strings.append(more),
            (Column::Compound(columns), Column::Compound(more)) => {
                for (column, more) in columns.iter_mut().zip(more) {
                    column.append(more)?;
                }
            }
            (Column::Values(values), Column::Values(more)) => values.extend(more),
            _ => return Err(Error::format("columns of different fields")),
        }
        Ok(())
    }
}

/// What a column could not hold (`n` of `what`: more than the allocator gives).
fn cannot_hold(n: usize, what: &str) -> Error {
    Error::out_of_memory(format!("cannot allocate {} {}", n, what))
}

/// The columns of `dtype` (a compound with variable-length parts): one per numpy
/// field, in that order (see numpy_dtype::memory_layout).
fn empty_columns(plan: &Plan, rows: usize) -> Result<Vec<Column>> {
    match Column::for_plan(plan, rows)? {
        Column::Compound(columns) => Ok(columns),
        _ => Err(Error::invalid_argument("columns are read from compounds with variable-length parts")),
    }
}

/// Resolve `n` stored elements of `dtype` (a compound with variable-length parts; raw
/// file layout in `raw`) into columns, on `threads` threads of the engine's pool.
pub fn resolve_vlen_columns_on(
    ctx: &FormatContext,
    heap: &GlobalHeapCache,
    dtype: &Datatype,
    raw: &[u8],
    n: usize,
    threads: usize,
) -> Result<Vec<Column>> {
    check_elements(dtype, raw, n)?;
    let plan = Plan::new(dtype, 0)?;
    let Plan::Compound(fields) = &plan else {
        return Err(Error::invalid_argument("columns are read from compounds with variable-length parts"));
    };
    let blocks = in_blocks(n, threads, |first, count| {
        let mut resolver = Resolver::new(ctx, heap);
        let mut columns = empty_columns(&plan, count)?;
        for element in raw[first * dtype.size..(first + count) * dtype.size].chunks_exact(dtype.size.max(1)) {
            for (column, (offset, size, field)) in columns.iter_mut().zip(fields) {
                let part = element.get(*offset..offset + size).ok_or_else(|| Error::format("a compound member outside its element"))?;
                column.push(&mut resolver, field, part)?;
            }
        }
        Ok(columns)
    })?;
    join(blocks)
}

/// Blocks of columns, in order, joined into one.
fn join(blocks: Vec<Vec<Column>>) -> Result<Vec<Column>> {
    let mut blocks = blocks.into_iter();
    let Some(mut columns) = blocks.next() else { return Ok(Vec::new()) };
    let rest: Vec<Vec<Column>> = blocks.collect();
    for (k, column) in columns.iter_mut().enumerate() {
        column.reserve_for(&rest.iter().filter_map(|block| block.get(k)).collect::<Vec<_>>())?;
    }
    for block in rest {
        for (column, more) in columns.iter_mut().zip(block) {
            column.append(more)?;
        }
    }
    Ok(columns)
}

/// Columns from resolved values of `dtype` (a compound with variable-length parts).
pub fn columns_from_values(dtype: &Datatype, values: Vec<VlenValue>) -> Result<Vec<Column>> {
    let plan = Plan::new(dtype, 0)?;
    let mut columns = empty_columns(&plan, values.len())?;
    for value in values {
        let VlenValue::Compound(fields) = value else {
            return Err(Error::format("a compound element without its members"));
        };
        if fields.len() != columns.len() {
            return Err(Error::format("a compound element with the wrong number of members"));
        }
        for (column, field) in columns.iter_mut().zip(fields) {
            column.push_value(field)?;
        }
    }
    Ok(columns)
}
