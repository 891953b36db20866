//! Fuzzes RAM/RAA reading: the input is split at its first NUL into a RAM and an RAA text.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (ram, raa) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    };
    let (Ok(ram), raa) = (std::str::from_utf8(ram), raa.map(std::str::from_utf8)) else {
        return;
    };
    let raa = match raa {
        Some(Ok(t)) => Some((t, Path::new("f.raa"))),
        Some(Err(_)) => return,
        None => None,
    };
    if let Ok(a) = skelett_io::rite::from_str(ram, Path::new("f.ram"), raa) {
        let mut pose = skelett::Pose::rest(&a.skeleton);
        for c in &a.clips {
            skelett::sample_uncached(c, c.start() + c.duration() * 0.5, &mut pose).unwrap();
        }
    }
});
