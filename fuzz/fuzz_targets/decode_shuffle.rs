#![no_main]
// The shuffle decoder through filters::decode_chunk, parameters taken from the input.
libfuzzer_sys::fuzz_target!(|data: &[u8]| h5turbo_fuzz::decode(h5turbo_fuzz::Family::from_name("shuffle").unwrap(), data));
