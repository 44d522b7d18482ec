#![no_main]
// The szip decoder through filters::decode_chunk, parameters taken from the input.
libfuzzer_sys::fuzz_target!(|data: &[u8]| h5turbo_fuzz::decode(h5turbo_fuzz::Family::from_name("szip").unwrap(), data));
