//! `boxmaker doctor` says "boxes can run here" only where a box can: each namespace probe
//! takes the step a box then takes in it (a fresh `/proc` in the pid namespace, a hostname
//! in the UTS one), because a container engine can allow the `unshare` and refuse the step
//! — a masked `/proc`, a seccomp profile that refuses `sethostname` (docs/deploy.md). Here
//! each made without a container: a `/proc` partly covered by a bind mount, as an engine's
//! masked paths cover it, and a seccomp filter that refuses `sethostname`, as an engine's
//! default profile does; doctor and a real box agree, both ways.

// Test code: a failed unwrap or panic here is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

/// `sh -c SCRIPT` in a mount namespace of its own (a user namespace too when not root), so
/// what it covers of `/proc` is covered for it alone.
fn in_own_mounts(script: &str) -> Output {
    let mut c = Command::new("unshare");
    // Root makes a mount namespace directly; anyone else inside a user namespace of their own.
    if !std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    {
        c.args(["--user", "--map-root-user"]);
    }
    c.args(["--mount", "--propagation", "private", "sh", "-c", script])
        .env("BOXMAKER", BIN)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn doctor_and_a_real_box_agree_on_a_partly_covered_proc() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("p");
    let init = Command::new(BIN)
        .arg("init")
        .arg(&project)
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", text(&init));
    let config = project.join("boxmaker.toml");
    let config = config.to_str().unwrap();
    let box_exec =
        format!("\"$BOXMAKER\" box exec --config '{config}' --session s -- /bin/echo inside-a-box");
    // As it is: doctor says boxes run, and one does.
    let plain = in_own_mounts(&format!("\"$BOXMAKER\" doctor; {box_exec}"));
    let out = text(&plain);
    assert!(out.contains("boxes can run here"), "{out}");
    assert!(out.contains("inside-a-box"), "{out}");
    // A file of /proc covered, as a container engine's masked paths cover them: the kernel
    // refuses a fresh /proc to a box's user, so no box starts — and doctor says so.
    let covered = in_own_mounts(&format!(
        "mount --bind /dev/null /proc/uptime || exit 97; \"$BOXMAKER\" doctor; echo doctor=$?; \
         {box_exec}; echo box=$?"
    ));
    let out = text(&covered);
    assert!(!out.contains("inside-a-box"), "{out}");
    assert!(out.contains("box=") && !out.contains("box=0"), "{out}");
    assert!(out.contains("doctor=1"), "{out}");
    assert!(
        out.contains("pid namespace          NO (required)  mounting a fresh /proc in it failed"),
        "{out}"
    );
    assert!(
        out.contains("boxes cannot run here: missing pid namespace"),
        "{out}"
    );
}

/// Runs `argv` under a seccomp filter that refuses `sethostname` with `EPERM` and allows
/// every other call (installed by Python's ctypes, then `exec`), as a container engine's
/// default profile refuses it to a process without `CAP_SYS_ADMIN`.
fn without_sethostname(argv: &[&str]) -> Output {
    const INSTALL: &str = r#"
import ctypes, os, sys
class F(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]
class P(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(F))]
prog = (F * 4)(F(0x20, 0, 0, 0), F(0x15, 0, 1, int(sys.argv[1])), F(0x06, 0, 0, 0x00050001), F(0x06, 0, 0, 0x7fff0000))
fprog = P(4, prog)
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
    sys.exit("could not install the filter: %d" % ctypes.get_errno())
os.execv(sys.argv[2], sys.argv[2:])
"#;
    // `sethostname`'s number: the filter names it as the kernel of this machine does.
    let nr = match std::env::consts::ARCH {
        "x86_64" => "170",
        "aarch64" | "riscv64" | "loongarch64" => "161",
        other => panic!("this test knows no sethostname number for {other}"),
    };
    Command::new("python3")
        .args(["-c", INSTALL, nr])
        .args(argv)
        .output()
        .unwrap()
}

#[test]
fn doctor_and_a_real_box_agree_under_a_seccomp_profile_that_refuses_sethostname() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("p");
    let init = Command::new(BIN)
        .arg("init")
        .arg(&project)
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", text(&init));
    let config = project.join("boxmaker.toml");
    let config = config.to_str().unwrap();
    let doctor = without_sethostname(&[BIN, "doctor"]);
    let out = text(&doctor);
    assert_eq!(doctor.status.code(), Some(1), "{out}");
    assert!(
        out.contains("uts namespace          NO (required)  sethostname in it failed"),
        "{out}"
    );
    assert!(
        out.contains("boxes cannot run here: missing uts namespace"),
        "{out}"
    );
    let boxed = without_sethostname(&[
        BIN,
        "box",
        "exec",
        "--config",
        config,
        "--session",
        "s",
        "--",
        "/bin/echo",
        "inside-a-box",
    ]);
    let out = text(&boxed);
    assert!(!boxed.status.success(), "{out}");
    assert!(!out.contains("inside-a-box"), "{out}");
    assert!(out.contains("sethostname"), "{out}");
}
