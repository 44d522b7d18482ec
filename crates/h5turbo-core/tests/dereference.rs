//! Object references resolve to the object and the name h5py gives it (`f[ref].name`),
//! including objects reached by several paths, where the name depends on the order
//! libhdf5 walks the file; from many threads at once, the paths being worked out once.
//!
//! Fixtures and expectations: tests/data/refs/make_refs.py (h5py).

use h5turbo_core::prelude::*;
use std::path::{Path, PathBuf};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/refs")
}

/// (index in /cell, address, name) of every reference of `file_name`, from refs.expect.
fn expected(file_name: &str) -> Vec<(usize, u64, String)> {
    let text = std::fs::read_to_string(data_dir().join("refs.expect")).unwrap();
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(4, ' ');
            (parts.next()? == file_name).then(|| {
                let index = parts.next().unwrap().parse().unwrap();
                let address = parts.next().unwrap().parse().unwrap();
                (index, address, parts.next().unwrap().to_string())
            })
        })
        .collect()
}

/// The addresses stored in the object reference dataset /cell.
fn cell_addresses(file: &File) -> Vec<u64> {
    let cell = file.get("/cell").unwrap();
    let n = cell.dataset().unwrap().shape()[0];
    let values = cell.read_vlen(&[AxisSelection::all(n)], 1).unwrap();
    values
        .iter()
        .map(|v| match v {
            VlenValue::Fixed(bytes) => u64::from_le_bytes(bytes[..8].try_into().unwrap()),
            other => panic!("object reference read as {:?}", other),
        })
        .collect()
}

#[test]
fn names_agree_with_h5py() {
    for file_name in ["refs_earliest.h5", "refs_latest.h5"] {
        let file = File::open(&data_dir().join(file_name)).unwrap();
        let addresses = cell_addresses(&file);
        let expect = expected(file_name);
        assert_eq!(expect.len(), addresses.len(), "{}", file_name);
        for (index, address, name) in expect {
            let (object, path) = file.dereference(addresses[index]).unwrap();
            assert_eq!(path.as_deref(), Some(name.as_str()), "{} reference {}", file_name, index);
            assert_eq!(object.name(), name);
            if address != 0 {
                assert_eq!(object.address(), address, "{} reference {}", file_name, index);
            }
        }
    }
}

#[test]
fn concurrent_dereferences_agree() {
    let file = File::open(&data_dir().join("refs_latest.h5")).unwrap();
    let addresses = cell_addresses(&file);
    let names = |file: &File| -> Vec<Option<String>> {
        addresses.iter().map(|&a| file.dereference(a).unwrap().1).collect()
    };
    let serial = names(&File::open(&data_dir().join("refs_latest.h5")).unwrap());
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| names(&file))).collect();
        for handle in handles {
            assert_eq!(handle.join().unwrap(), serial);
        }
    });
}

#[test]
fn bad_addresses_and_closed_files_are_typed_errors() {
    let file = File::open(&data_dir().join("refs_earliest.h5")).unwrap();
    let err = file.dereference(3).err().expect("no object header at address 3");
    assert!(err.to_string().contains("object reference to address 3"), "{}", err);
    let address = cell_addresses(&file)[0];
    file.close();
    assert_eq!(file.dereference(address).err().map(|e| e.kind()), Some(ErrorKind::Closed));
}

#[test]
fn a_broken_object_elsewhere_does_not_break_other_references() {
    let name = "refs_earliest.h5";
    let mut bytes = std::fs::read(data_dir().join(name)).unwrap();
    let expect = expected(name);
    let (_, z_address, _) = expect.iter().find(|(_, _, n)| n == "/z").cloned().unwrap();
    bytes[z_address as usize] = 0xEE; // the object header version of /z: unreadable
    let file = File::from_source(std::sync::Arc::new(MemSource::new(bytes)), Path::new(name)).unwrap();
    let addresses = cell_addresses(&file);
    for (index, address, name) in expect {
        let result = file.dereference(addresses[index]);
        if address == z_address {
            let err = result.err().expect("the broken object itself is an error");
            assert!(err.to_string().contains(&format!("object reference to address {}", z_address)), "{}", err);
        } else {
            assert_eq!(result.unwrap().1.as_deref(), Some(name.as_str()), "reference {}", index);
        }
    }
}
