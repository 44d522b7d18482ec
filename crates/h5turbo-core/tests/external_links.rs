//! `File::get_following_external` follows external links into their files, as
//! libhdf5's H5Oopen does (what the C and R front ends open objects with); `get`
//! reports them. Files: the jhdf corpus (tests/data/corpus/jhdf, written by h5py).

use h5turbo_core::prelude::*;
use std::path::PathBuf;

fn corpus(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/corpus/jhdf").join(name)
}

#[test]
fn an_external_link_opens_its_target_in_the_other_file() {
    let file = File::open(&corpus("test_file.hdf5")).unwrap();
    let linked = file.get_following_external("/links_group/external_link").unwrap();
    let direct = File::open(&corpus("test_file_ext.hdf5")).unwrap().get("/external_dataset").unwrap();
    assert_eq!(linked.name(), "/external_dataset");
    assert_eq!(linked.file().path().file_name(), direct.file().path().file_name());
    assert_eq!(linked.address(), direct.address());
    let (a, b) = (linked.dataset().unwrap(), direct.dataset().unwrap());
    assert_eq!(a.shape(), b.shape());
    let sel: Vec<AxisSelection> = a.shape().iter().map(|&n| AxisSelection::all(n)).collect();
    let bytes = a.shape().iter().product::<u64>() as usize * a.element_size();
    let (mut x, mut y) = (vec![0u8; bytes], vec![0u8; bytes]);
    linked.read_numpy(&sel, &mut x, 1).unwrap();
    direct.read_numpy(&sel, &mut y, 1).unwrap();
    assert_eq!(x, y);
}

#[test]
fn get_reports_external_links_and_a_missing_target_names_the_link() {
    let file = File::open(&corpus("test_file.hdf5")).unwrap();
    let reported = file.get("/links_group/external_link").err().unwrap();
    assert_eq!(reported.kind(), ErrorKind::Unsupported);
    let missing = file.get_following_external("/links_group/external_link_to_missing_file").err().unwrap();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    let message = missing.to_string();
    assert!(message.contains("external_link_to_missing_file") && message.contains("missing_file.hdf5"), "{}", message);
}

#[test]
fn a_link_to_the_root_of_another_file_and_on_through_it() {
    let file = File::open(&corpus("external_link.hdf5")).unwrap();
    for link in ["/root_dot", "/root_slash"] {
        let root = file.get_following_external(link).unwrap();
        assert_eq!(root.name(), "/");
        assert_eq!(root.kind(), ObjectKind::Group);
        assert!(root.file().path().ends_with("test_file.hdf5"));
        // a path that goes on through the link, and through a second one in the target
        let through = file.get_following_external(&format!("{}/links_group/external_link", link)).unwrap();
        assert!(through.file().path().ends_with("test_file_ext.hdf5"));
    }
}

#[test]
fn a_member_followed_from_its_group() {
    let file = File::open(&corpus("test_file.hdf5")).unwrap();
    let group = file.get("/links_group").unwrap();
    assert!(group.child("external_link").is_err());
    let linked = group.child_following_external("external_link").unwrap();
    assert_eq!(linked.name(), "/external_dataset");
    assert!(linked.file().path().ends_with("test_file_ext.hdf5"));
}
