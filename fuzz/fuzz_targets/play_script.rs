//! Fuzzes `skelett play` scripts (`skelett_cli::play::ScriptPlayer::parse`) against the
//! embedded Fox: parsed, bound (clips, events, layers, masks, root motion), started and run
//! at 30 Hz for up to 300 steps, every command at its time (plays, cross-fades, queues, blend
//! spaces, seeks, layer weights, IK), then checked for commands past the end.
//! Errors are expected; panics, hangs, runaway allocations and non-finite poses are bugs.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use skelett_cli::play::ScriptPlayer;
use skelett_io::Asset;

fn fox() -> &'static Asset {
    static FOX: OnceLock<Asset> = OnceLock::new();
    FOX.get_or_init(|| skelett_cli::load(None).expect("the embedded Fox").0)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let asset = fox();
    let Ok(player) = ScriptPlayer::parse(asset, text, Path::new("fuzz.json"), None) else {
        return;
    };
    let Ok(mut state) = player.start() else {
        return;
    };
    let dt = 1.0 / 30.0;
    let steps = (f64::from(player.duration()) / f64::from(dt)).clamp(0.0, 300.0) as usize;
    for step in 0..steps {
        if player.run_due(&mut state, step as f64 * f64::from(dt)).is_err() {
            return;
        }
        state.update(dt);
        assert!(
            state.anim().pose().iter().all(|t| t.is_finite()),
            "non-finite pose at step {step}"
        );
    }
    let _ = player.check_done(&state);
});
