//! Whole processes measured one at a time: a bench binary runs itself with `--measure CMD...`,
//! and that child runs CMD and reports CMD's wall time, peak RSS and CPU time, read with
//! `getrusage(RUSAGE_CHILDREN)` (which covers exactly the one grandchild).

use std::process::{Command, Stdio};
use std::time::Instant;

/// What one measured process took.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// Wall time, seconds.
    pub seconds: f64,
    /// Peak resident set, KiB.
    pub rss_kib: u64,
    /// User plus system CPU time, seconds.
    pub cpu_seconds: f64,
}

/// Runs `command` through this bench binary's `--measure` mode.
pub fn measure<S: AsRef<std::ffi::OsStr>>(command: &[S]) -> Measured {
    let output = Command::new(std::env::current_exe().expect("this bench binary"))
        .arg("--measure")
        .args(command)
        .stderr(Stdio::inherit())
        .output()
        .expect("the measuring child");
    let text = String::from_utf8_lossy(&output.stdout);
    let mut fields = text.split_whitespace();
    let mut next = |what: &str| fields.next().unwrap_or_else(|| panic!("no {what} in {text:?}"));
    Measured {
        seconds: next("seconds").parse().expect("seconds"),
        rss_kib: next("rss").parse().expect("rss"),
        cpu_seconds: next("cpu").parse().expect("cpu"),
    }
}

/// `--measure`: runs `command` (output discarded), fails on a non-zero exit, prints
/// `<seconds> <peak RSS KiB> <CPU seconds>` of that one child.
#[allow(unsafe_code)] // `getrusage` is the one way to read a finished child's peak RSS.
pub fn measure_child(command: &[String]) {
    let started = Instant::now();
    let status = Command::new(&command[0])
        .args(&command[1..])
        .stdout(Stdio::null())
        .status()
        .expect("the measured command");
    let seconds = started.elapsed().as_secs_f64();
    assert!(status.success(), "{command:?} failed: {status}");
    // SAFETY: `getrusage` writes into the zeroed struct it is given and has no other effect.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let time = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    println!("{seconds} {} {}", usage.ru_maxrss, time(usage.ru_utime) + time(usage.ru_stime));
}
