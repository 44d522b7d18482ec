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

// ------------------------------------------------------------------------------------
// Target files opened once per source file (tests/data/external_links, written by
// libhdf5: gen_external_links.c). Each test works on its own copy of the fixtures, so
// that it may rewrite them and count the descriptors open on them.

use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh folder holding copies of the libhdf5-written fixtures (removed on drop).
struct Fixtures {
    dir: PathBuf,
}

impl Fixtures {
    fn copy(names: &[&str]) -> Fixtures {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = format!("h5turbo-extlinks-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
        let dir = std::env::temp_dir().join(unique);
        std::fs::create_dir_all(&dir).unwrap();
        for name in names {
            std::fs::copy(fixture(name), dir.join(name)).unwrap();
        }
        Fixtures { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Fixtures {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/external_links").join(name)
}

/// Shape and int32 values of a dataset, read whole.
fn shape_and_values(object: &Object) -> (Vec<u64>, Vec<i32>) {
    let ds = object.dataset().unwrap();
    let sel: Vec<AxisSelection> = ds.shape().iter().map(|&n| AxisSelection::all(n)).collect();
    let count = ds.shape().iter().product::<u64>() as usize;
    let mut bytes = vec![0u8; count * 4];
    object.read_numpy(&sel, &mut bytes, 1).unwrap();
    let values = bytes.chunks_exact(4).map(|b| i32::from_le_bytes(b.try_into().unwrap())).collect();
    (ds.shape().to_vec(), values)
}

/// What libhdf5 reads at `path` of the file `name` opened by itself (the reference).
fn direct(file: &std::path::Path, path: &str) -> (Vec<u64>, Vec<i32>) {
    shape_and_values(&File::open(file).unwrap().get(path).unwrap())
}

/// The descriptors of this process open on `path` (Linux: /proc/self/fd).
fn descriptors_open_on(path: &std::path::Path) -> usize {
    let wanted = std::fs::canonicalize(path).unwrap();
    let entries = std::fs::read_dir("/proc/self/fd").unwrap();
    entries.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok()).filter(|p| *p == wanted).count()
}

#[test]
#[cfg(target_os = "linux")]
fn a_thousand_objects_through_links_share_one_open_target() {
    let files = Fixtures::copy(&["links.h5", "target.h5"]);
    let source = File::open(&files.path("links.h5")).unwrap();
    let expected = direct(&files.path("target.h5"), "/data");
    let objects: Vec<Object> =
        (0..1000).map(|k| source.get_following_external(&format!("/many/m{:04}", k)).unwrap()).collect();
    // all held at once: before the cache each held its own descriptor of target.h5
    assert_eq!(descriptors_open_on(&files.path("target.h5")), 1);
    for object in [&objects[0], &objects[999]] {
        assert_eq!(object.name(), "/data");
        assert_eq!(shape_and_values(object), expected);
    }
    let group = source.get("/many").unwrap();
    let members: Vec<Object> = (0..1000).map(|k| group.child_following_external(&format!("m{:04}", k)).unwrap()).collect();
    assert_eq!(descriptors_open_on(&files.path("target.h5")), 1);
    drop((objects, members));
    // closing the source gives the target's descriptor back (no object holds it now)
    source.close();
    assert_eq!(descriptors_open_on(&files.path("target.h5")), 0);
}

/// Replace `name` by `with`: in place (same inode) or by renaming a new file over it.
fn replace(files: &Fixtures, name: &str, with: &str, in_place: bool) {
    if in_place {
        std::fs::write(files.path(name), std::fs::read(fixture(with)).unwrap()).unwrap();
    } else {
        let fresh = files.path(&format!("{}.new", name));
        std::fs::copy(fixture(with), &fresh).unwrap();
        std::fs::rename(&fresh, files.path(name)).unwrap();
    }
}

#[test]
fn a_target_rewritten_between_opens_is_read_fresh() {
    for in_place in [true, false] {
        let files = Fixtures::copy(&["links.h5", "target.h5"]);
        let source = File::open(&files.path("links.h5")).unwrap();
        let before = shape_and_values(&source.get_following_external("/to_data").unwrap());
        assert_eq!(before, direct(&fixture("target.h5"), "/data"));
        replace(&files, "target.h5", "target_rewritten.h5", in_place);
        let after = shape_and_values(&source.get_following_external("/to_data").unwrap());
        assert_eq!(after, direct(&fixture("target_rewritten.h5"), "/data"), "in place: {}", in_place);
        assert_ne!(after, before);
        // and back again: a cached file is never taken for the one now at the path
        replace(&files, "target.h5", "target.h5", in_place);
        assert_eq!(shape_and_values(&source.get_following_external("/to_data").unwrap()), before);
    }
}

/// The kind and message of a failed open through links.
fn failure(source: &File, path: &str) -> (ErrorKind, String) {
    let e = source.get_following_external(path).err().unwrap_or_else(|| panic!("{} opened", path));
    (e.kind(), e.to_string())
}

#[test]
fn cycles_and_missing_or_broken_targets_fail_the_same_every_time() {
    let files = Fixtures::copy(&["links.h5"]);
    let source = File::open(&files.path("links.h5")).unwrap();
    // libhdf5's H5Oopen fails on both (gen_external_links.c prints it)
    let cycle = failure(&source, "/loop_a");
    assert_eq!(cycle.0, ErrorKind::TooManyLinks, "{}", cycle.1);
    // each link of the loop named once, not once per time round it
    assert_eq!(cycle.1.matches("external link '/loop_a'").count(), 1, "{}", cycle.1);
    assert_eq!(cycle.1.matches("external link '/loop_b'").count(), 1, "{}", cycle.1);
    let missing = failure(&source, "/missing");
    assert_eq!(missing.0, ErrorKind::NotFound);
    assert!(missing.1.contains("no_such_file.h5") && missing.1.contains("missing"), "{}", missing.1);
    let absent_target = failure(&source, "/to_data");
    assert_eq!(absent_target.0, ErrorKind::NotFound);
    for _ in 0..3 {
        assert_eq!(failure(&source, "/loop_a"), cycle);
        assert_eq!(failure(&source, "/missing"), missing);
        assert_eq!(failure(&source, "/to_data"), absent_target);
    }
    // a target that is not an HDF5 file breaks the link as libhdf5's traversal fails
    // (h5py: KeyError), saying why, and is not kept: once it is one, it opens
    std::fs::write(files.path("target.h5"), b"not an HDF5 file").unwrap();
    let broken = failure(&source, "/to_data");
    assert_eq!(broken.0, ErrorKind::NotFound, "{}", broken.1);
    assert!(broken.1.contains("cannot be opened as HDF5") && broken.1.contains("not an HDF5 file"), "{}", broken.1);
    assert_eq!(failure(&source, "/to_data"), broken);
    std::fs::copy(fixture("target.h5"), files.path("target.h5")).unwrap();
    let opened = shape_and_values(&source.get_following_external("/to_data").unwrap());
    assert_eq!(opened, direct(&fixture("target.h5"), "/data"));
}

/// Everything the tests follow, as (path, shape and values or the error's kind).
fn follow_all(source: &File) -> Vec<(String, std::result::Result<(Vec<u64>, Vec<i32>), ErrorKind>)> {
    let paths = (0..1000).map(|k| format!("/many/m{:04}", k)).chain(
        ["/to_data", "/to_root/data", "/round_trip", "/g/soft_to_ext", "/loop_a", "/missing"].map(String::from),
    );
    paths
        .map(|p| {
            let got = source.get_following_external(&p).map(|o| shape_and_values(&o)).map_err(|e| e.kind());
            (p, got)
        })
        .collect()
}

#[test]
fn many_threads_following_links_at_once_get_the_serial_results() {
    let files = Fixtures::copy(&["links.h5", "target.h5"]);
    let serial = follow_all(&File::open(&files.path("links.h5")).unwrap());
    assert_eq!(serial[0].1, Ok(direct(&fixture("target.h5"), "/data")));
    assert_eq!(serial[1003].1, Ok(direct(&fixture("target.h5"), "/data")));
    assert_eq!(serial[1004].1, Err(ErrorKind::TooManyLinks));
    let shared = File::open(&files.path("links.h5")).unwrap();
    std::thread::scope(|s| {
        let runs: Vec<_> = (0..8).map(|_| s.spawn(|| follow_all(&shared))).collect();
        for run in runs {
            assert_eq!(run.join().unwrap(), serial);
        }
    });
}

/// Not a test: time to open 10,000 objects through external links (one file open per
/// object before the cache). `cargo test --release --test external_links -- --ignored --nocapture`
#[test]
#[ignore]
fn bench_ten_thousand_objects_through_links() {
    let files = Fixtures::copy(&["links.h5", "target.h5"]);
    let source = File::open(&files.path("links.h5")).unwrap();
    for hold in [false, true] {
        let started = std::time::Instant::now();
        let mut held = Vec::new();
        for k in 0..10_000 {
            let object = source.get_following_external(&format!("/many/m{:04}", k % 1000)).unwrap();
            if hold {
                held.push(object);
            }
        }
        let took = started.elapsed();
        println!(
            "10,000 objects through external links ({}): {:.1} ms, {:.1} us each, descriptors on the target: {}",
            if hold { "all held" } else { "each dropped" },
            took.as_secs_f64() * 1e3,
            took.as_secs_f64() * 1e6 / 10_000.0,
            descriptors_open_on(&files.path("target.h5"))
        );
    }
    // what the two halves cost without the link: the group in links.h5, the dataset in target.h5
    let target = File::open(&files.path("target.h5")).unwrap();
    for (label, file, path) in [("links.h5 /many", &source, "/many"), ("target.h5 /data", &target, "/data")] {
        let started = std::time::Instant::now();
        (0..10_000).for_each(|_| drop(file.get(path).unwrap()));
        println!("10,000 opens of {} (no link): {:.1} ms", label, started.elapsed().as_secs_f64() * 1e3);
    }
}
