//! The shared library's SONAME on Linux: `libh5turbo.so.MAJOR`, or `libh5turbo.so.0.MINOR`
//! before 1.0 (where a minor release may change the ABI, as Cargo's semver reads 0.x;
//! cargo-c names its libraries the same way). A program linked against
//! `libh5turbo.so` then records the SONAME, so an installed library of another ABI
//! is never loaded in its place. mk/c.mk installs the file under the full version
//! with the two links (`libh5turbo.so.SOVERSION`, `libh5turbo.so`).

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_default();
    let minor = std::env::var("CARGO_PKG_VERSION_MINOR").unwrap_or_default();
    let soversion = if major == "0" { format!("0.{minor}") } else { major };
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libh5turbo.so.{soversion}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
