//! Datatypes, dataspaces, attributes, fill values and values compared with h5py.
//!
//! `tests/data/datatypes/expected.json` (fixtures) and `corpus_expected.json`
//! (jhdf and pyfive files in the repository's tests/data/corpus) were written by
//! `gen_fixtures.py` with h5py 3.16: for every dataset and attribute, the dtype h5py
//! reports, the shape, the numpy bytes (or vlen values) and the fill value.

mod support;

use h5turbo_core::format::attribute::{Attribute, AttributeDatatype};
use h5turbo_core::format::dataspace::{Dataspace, DataspaceKind};
use h5turbo_core::format::datatype::{Datatype, DatatypeClass};
use h5turbo_core::format::fill_value::FillValue;
use h5turbo_core::format::global_heap::GlobalHeapCache;
use h5turbo_core::convert::numpy_dtype::{memory_layout, vlen_element_dtype};
use h5turbo_core::format::shared::{parse_shared_message, MESSAGE_FLAG_SHARED};
use h5turbo_core::convert::columns::{columns_from_values, resolve_vlen_columns_on};
use h5turbo_core::convert::values::{resolve_vlen_elements, to_numpy_bytes, VlenValue};
use h5turbo_core::format::FormatContext;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use support::*;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/datatypes")
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/corpus")
}

#[derive(Default)]
struct Tally {
    /// (message type, message version) of everything parsed, to show what was covered.
    versions: std::collections::BTreeSet<(u16, u8)>,
    dtypes: usize,
    values: usize,
    fills: usize,
    /// compounds with vlen parts also read field by field
    columns: usize,
    skipped: Vec<String>,
    failures: Vec<String>,
}

impl Tally {
    fn check(&mut self, what: &str, ok: bool, detail: impl FnOnce() -> String) {
        if !ok {
            self.failures.push(format!("{}: {}", what, detail()));
        }
    }
}

/// The datatype message of an object header, following a shared (committed) one.
fn resolve_datatype(ctx: &FormatContext, msg: &Message) -> Datatype {
    if msg.flags & MESSAGE_FLAG_SHARED != 0 {
        let shared = parse_shared_message(&msg.body, msg.address, ctx.sizes()).unwrap();
        let target = messages(ctx, shared.object_header_address().unwrap());
        return resolve_datatype(ctx, find(&target, MSG_DATATYPE).expect("committed datatype message"));
    }
    Datatype::parse(&msg.body, msg.address, ctx.sizes()).unwrap()
}

fn shape_json(space: &Dataspace) -> Json {
    match space.kind {
        DataspaceKind::Null => Json::Null,
        _ => Json::Arr(space.dims.iter().map(|d| Json::Num(d.to_string())).collect()),
    }
}

/// Our vlen values in the generator's JSON form; `dt` is the type they belong to.
fn vlen_json(dt: &Datatype, v: &VlenValue) -> Json {
    let obj = |fields: Vec<(&str, Json)>| Json::Obj(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
    let base = match &dt.class {
        DatatypeClass::VarLen { base, .. } | DatatypeClass::Array { base, .. } => Some(base.as_ref()),
        _ => None,
    };
    match v {
        VlenValue::Fixed(b) => obj(vec![("hex", Json::Str(hex(b)))]),
        VlenValue::String(b) => obj(vec![("s", Json::Str(hex(b)))]),
        VlenValue::Sequence { count, bytes } => {
            let element = vlen_element_dtype(&base.unwrap().numpy_dtype().unwrap());
            let dt = Json::Str(element.to_descr_string());
            obj(vec![("dt", dt), ("hex", Json::Str(hex(bytes))), ("n", Json::Num(count.to_string()))])
        }
        VlenValue::NestedSequence(items) => {
            obj(vec![("seq", Json::Arr(items.iter().map(|x| vlen_json(base.unwrap(), x)).collect()))])
        }
        VlenValue::Array(items) => {
            obj(vec![("items", Json::Arr(items.iter().map(|x| vlen_json(base.unwrap(), x)).collect()))])
        }
        VlenValue::Compound(items) => {
            let DatatypeClass::Compound { members } = &dt.class else { panic!("compound value of {:?}", dt) };
            let layout = memory_layout(dt).unwrap();
            let fields = layout.fields.iter().zip(items).map(|(&(i, _), x)| vlen_json(&members[i].datatype, x));
            obj(vec![("fields", Json::Arr(fields.collect()))])
        }
    }
}

/// Null in the expected tree (h5py reference objects) matches anything.
fn tree_matches(expected: &Json, ours: &Json) -> bool {
    match (expected, ours) {
        (Json::Null, _) => true,
        (Json::Arr(a), Json::Arr(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| tree_matches(x, y)),
        (Json::Obj(a), Json::Obj(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|((ka, va), (kb, vb))| ka == kb && tree_matches(va, vb))
        }
        _ => expected == ours,
    }
}

struct Subject<'a> {
    label: String,
    ctx: &'a FormatContext,
    heap: &'a GlobalHeapCache,
    datatype: Datatype,
    dataspace: Dataspace,
    /// Raw element bytes when we can get them without a chunk reader.
    raw: Option<Vec<u8>>,
}

fn compare_dtype(t: &mut Tally, rec: &Json, s: &Subject) -> bool {
    let expected = rec.str("dtype").unwrap();
    let ours = s.datatype.numpy_dtype();
    t.dtypes += 1;
    match (expected.strip_prefix("error:"), &ours) {
        (Some(_), Err(_)) => false,
        (Some(_), Ok(d)) => {
            t.check(&s.label, false, || format!("h5py fails ({}), we give {}", expected, d.to_descr_string()));
            false
        }
        (None, Ok(d)) => {
            t.check(&s.label, d.to_descr_string() == expected, || {
                format!("dtype {} != h5py {}", d.to_descr_string(), expected)
            });
            let meta = s.datatype.h5py_metadata().map(|m| m.to_descr_string());
            let expected_meta = rec.str("meta");
            t.check(&s.label, meta.as_deref() == expected_meta, || {
                format!("dtype metadata {:?} != h5py {:?}", meta, expected_meta)
            });
            true
        }
        (None, Err(e)) => {
            t.check(&s.label, false, || format!("h5py gives {}, we fail: {}", expected, e));
            false
        }
    }
}

fn compare_values(t: &mut Tally, rec: &Json, s: &Subject) {
    if let Some(shape) = rec.get("shape") {
        let ours = shape_json(&s.dataspace);
        t.check(&s.label, shape == &ours, || format!("shape {:?} != h5py {:?}", ours, shape));
    }
    let n = s.dataspace.num_elements().unwrap() as usize;
    let Some(raw) = &s.raw else {
        if rec.get("hex").is_some() || rec.get("fnv").is_some() || rec.get("tree").is_some() {
            t.skipped.push(format!("{}: values (chunked or unallocated)", s.label));
        }
        return;
    };
    if let Some(Json::Arr(tree)) = rec.get("tree") {
        t.values += 1;
        let ours = resolve_vlen_elements(s.ctx, s.heap, &s.datatype, raw, n);
        if let (Ok(values), DatatypeClass::Compound { .. }) = (&ours, &s.datatype.class) {
            // a compound read field by field holds the same values
            t.columns += 1;
            let direct = resolve_vlen_columns_on(s.ctx, s.heap, &s.datatype, raw, n, 1);
            let via_values = columns_from_values(&s.datatype, values.clone());
            t.check(&s.label, matches!((&direct, &via_values), (Ok(a), Ok(b)) if a == b), || {
                format!("columns {:?} differ from the values' {:?}", direct, via_values)
            });
        }
        match ours {
            Ok(values) => {
                let ours = Json::Arr(values.iter().map(|v| vlen_json(&s.datatype, v)).collect());
                t.check(&s.label, tree_matches(&Json::Arr(tree.clone()), &ours), || {
                    format!("vlen values {:?} != h5py {:?}", ours, tree)
                });
            }
            Err(e) => t.check(&s.label, false, || format!("vlen values failed: {}", e)),
        }
        return;
    }
    let expected_hex = rec.str("hex").map(str::to_string);
    let expected_fnv = rec.str("fnv").map(str::to_string);
    if expected_hex.is_none() && expected_fnv.is_none() {
        return;
    }
    t.values += 1;
    match to_numpy_bytes(&s.datatype, raw, n) {
        Ok(bytes) => {
            if let Some(h) = expected_hex {
                t.check(&s.label, hex(&bytes) == h, || format!("values {} != h5py {}", hex(&bytes), h));
            } else if let Some(f) = expected_fnv {
                t.check(&s.label, fnv1a(&bytes) == f, || format!("values hash {} != h5py {}", fnv1a(&bytes), f));
            }
        }
        Err(e) => t.check(&s.label, false, || format!("conversion failed: {}", e)),
    }
}

fn compare_fill(t: &mut Tally, rec: &Json, msgs: &[Message], ctx: &FormatContext, s: &Subject) {
    let Some(expected) = rec.str("fill") else { return };
    let fill = match (find(msgs, MSG_FILL_NEW), find(msgs, MSG_FILL_OLD)) {
        (Some(m), _) => FillValue::parse_new(&m.body, m.address, ctx.sizes()).unwrap(),
        (None, Some(m)) => FillValue::parse_old(&m.body, m.address, ctx.sizes()).unwrap(),
        (None, None) => FillValue { value: None, alloc_time: 2, fill_time: 2 },
    };
    fill.check_size(s.datatype.size).unwrap();
    let bytes = match &fill.value {
        Some(v) => to_numpy_bytes(&s.datatype, v, 1),
        None => to_numpy_bytes(&s.datatype, &vec![0u8; s.datatype.size], 1),
    };
    t.fills += 1;
    match bytes {
        Ok(b) => t.check(&s.label, hex(&b) == expected, || format!("fill {} != h5py {}", hex(&b), expected)),
        Err(e) => t.check(&s.label, false, || format!("fill conversion failed: {}", e)),
    }
}

fn note_versions(t: &mut Tally, msgs: &[Message]) {
    for m in msgs {
        let version = match m.kind {
            MSG_DATATYPE if m.flags & MESSAGE_FLAG_SHARED == 0 => m.body[0] >> 4,
            MSG_DATATYPE => 0x80 | m.body[0], // shared message version
            MSG_DATASPACE | MSG_FILL_NEW | MSG_ATTRIBUTE => m.body[0],
            MSG_FILL_OLD => 0,
            _ => continue,
        };
        t.versions.insert((m.kind, version));
    }
}

fn check_dataset(t: &mut Tally, rec: &Json, ctx: &FormatContext, heap: &GlobalHeapCache, label: String) {
    let msgs = messages(ctx, rec.u64("addr").unwrap());
    note_versions(t, &msgs);
    let datatype = resolve_datatype(ctx, find(&msgs, MSG_DATATYPE).expect("datatype message"));
    let space_msg = find(&msgs, MSG_DATASPACE).expect("dataspace message");
    let dataspace = Dataspace::parse(&space_msg.body, space_msg.address, ctx.sizes()).unwrap();
    let nbytes = dataspace.num_elements().unwrap() * datatype.size as u64;
    let raw = find(&msgs, MSG_LAYOUT).and_then(|l| raw_data(ctx, l, nbytes));
    let s = Subject { label, ctx, heap, datatype, dataspace, raw };
    if compare_dtype(t, rec, &s) {
        compare_values(t, rec, &s);
        compare_fill(t, rec, &msgs, ctx, &s);
    }
}

fn check_attribute(t: &mut Tally, rec: &Json, ctx: &FormatContext, heap: &GlobalHeapCache, label: String) {
    let name = rec.str("name").unwrap();
    let msgs = messages(ctx, rec.u64("addr").unwrap());
    note_versions(t, &msgs);
    let attrs = msgs.iter().filter(|m| m.kind == MSG_ATTRIBUTE);
    let parsed = attrs.map(|m| Attribute::parse(&m.body, m.address, ctx.sizes()).unwrap());
    let Some(mut attr) = parsed.into_iter().find(|a| a.name == name) else {
        t.skipped.push(format!("{}: attribute not in the object header (dense storage)", label));
        return;
    };
    let datatype = match &attr.datatype {
        AttributeDatatype::Inline(dt) => dt.clone(),
        AttributeDatatype::Shared(shared) => {
            let target = messages(ctx, shared.object_header_address().unwrap());
            let dt = resolve_datatype(ctx, find(&target, MSG_DATATYPE).unwrap());
            let len = attr.value_len(&dt).unwrap();
            attr.data.truncate(len);
            dt
        }
    };
    let s = Subject { label, ctx, heap, datatype, dataspace: attr.dataspace.clone(), raw: Some(attr.data.clone()) };
    if compare_dtype(t, rec, &s) {
        compare_values(t, rec, &s);
    }
}

fn run(expected_file: &Path, root: &Path) -> Tally {
    let text = std::fs::read_to_string(expected_file).unwrap();
    let records = parse_json(&text);
    let mut files: HashMap<String, (FormatContext, GlobalHeapCache)> = HashMap::new();
    let mut t = Tally::default();
    for rec in records.array() {
        let file = rec.str("file").unwrap().to_string();
        let (ctx, heap) =
            files.entry(file.clone()).or_insert_with(|| (open(&root.join(&file)), GlobalHeapCache::new()));
        let path = rec.str("path").unwrap();
        match rec.str("kind").unwrap() {
            "dataset" => check_dataset(&mut t, rec, ctx, heap, format!("{}:{}", file, path)),
            _ => {
                let label = format!("{}:{}@{}", file, path, rec.str("name").unwrap());
                check_attribute(&mut t, rec, ctx, heap, label)
            }
        }
    }
    t
}

fn report(name: &str, t: &Tally) {
    eprintln!(
        "{}: {} dtypes, {} value sets ({} compounds also as columns), {} fill values compared; {} skipped; {} failures",
        name,
        t.dtypes,
        t.values,
        t.columns,
        t.fills,
        t.skipped.len(),
        t.failures.len()
    );
    eprintln!("  (message type, version) seen: {:?}", t.versions);
    for s in &t.skipped {
        eprintln!("  skipped {}", s);
    }
    for f in &t.failures {
        eprintln!("  FAIL {}", f);
    }
}

#[test]
fn fixtures_match_h5py() {
    let t = run(&data_dir().join("expected.json"), &data_dir());
    report("fixtures", &t);
    assert!(t.failures.is_empty(), "{} mismatches with h5py", t.failures.len());
    assert!(t.dtypes >= 250 && t.values >= 200 && t.fills >= 70 && t.columns >= 5, "too little was compared");
    // Both libver settings: attribute messages 1-3, datatype messages 1, 2 and 5
    // (complex), dataspace 1 and 2, old fill value, new fill value 2 and 3.
    for v in [(MSG_ATTRIBUTE, 1), (MSG_ATTRIBUTE, 2), (MSG_ATTRIBUTE, 3), (MSG_DATASPACE, 1), (MSG_DATASPACE, 2)] {
        assert!(t.versions.contains(&v), "fixtures lack {:?}", v);
    }
    for v in [
        (MSG_DATATYPE, 1),
        (MSG_DATATYPE, 2),
        (MSG_DATATYPE, 5),
        (MSG_FILL_OLD, 0),
        (MSG_FILL_NEW, 2),
        (MSG_FILL_NEW, 3),
    ] {
        assert!(t.versions.contains(&v), "fixtures lack {:?}", v);
    }
}

#[test]
fn corpus_matches_h5py() {
    let root = corpus_dir();
    assert!(root.join("jhdf").is_dir(), "the corpus is part of the repository: {}", root.display());
    let t = run(&data_dir().join("corpus_expected.json"), &root);
    report("corpus", &t);
    assert!(t.failures.is_empty(), "{} mismatches with h5py", t.failures.len());
    assert!(t.versions.contains(&(MSG_DATATYPE, 3)), "corpus should hold version 3 datatypes");
    assert!(t.dtypes >= 300 && t.values >= 200 && t.columns >= 5, "too little was compared");
}
