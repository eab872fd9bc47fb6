//! The escape suite through the product: every attack runs through `boxmaker box exec` as a
//! real process, the way a person (or the runner) starts a box, and each test asserts the
//! attempt fails and the host is untouched. Where it matters, a positive control (`..._works`)
//! shows the same attempt succeeds once the config allows it, so the test can fail.
//!
//! Each test has its own directory with its own `boxmaker.toml` and state directory.

// Test helpers outside #[test] functions: a failed unwrap there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

/// `EPERM`, as a seccomp filter answers a denied call (x86_64 and every Linux arch).
const EPERM: i32 = 1;

/// No box call in this suite may take longer than this; past it the test fails, never hangs.
const CALL_DEADLINE: Duration = Duration::from_secs(60);

/// One test's directory: a `boxmaker.toml`, its state directory, and room for host files.
struct Fixture {
    dir: PathBuf,
    config: PathBuf,
    /// The test's own session id, so no two tests share a session (or its host uid).
    id: String,
}

impl Fixture {
    /// A fresh directory for test `name` with a config holding the `[box]` lines `limits`.
    fn new(name: &str, limits: &str) -> Self {
        let dir = Self::scratch(name);
        let f = Self {
            config: dir.join("boxmaker.toml"),
            dir,
            id: name.to_owned(),
        };
        f.configure(limits, &[]);
        f
    }

    /// Rewrites the config: `[box]` lines `limits`, and `mounts` as `(host dir, at, write)`.
    fn configure(&self, limits: &str, mounts: &[(&Path, &str, bool)]) {
        let mut toml = format!(
            "[gate]\nstate = {:?}\n\n[box]\n{limits}\n",
            self.dir.join("state").to_str().unwrap()
        );
        for (host, at, write) in mounts {
            toml.push_str(&format!(
                "\n[[mount]]\nhost = {:?}\nat = {at:?}\nclass = \"internal\"\nwrite = {write}\n",
                host.to_str().unwrap()
            ));
        }
        fs::write(&self.config, toml).unwrap();
        // The tester's own config: trusted as written (docs/spec.md §6, "Whose config").
        assert!(
            testkit::trust(BIN, &self.config),
            "boxmaker trust refused the config"
        );
    }

    /// An empty directory, world-readable so that only the box stands between a box user and
    /// what the test puts there.
    fn scratch(name: &str) -> PathBuf {
        let dir = testkit::fresh_dir(
            env!("CARGO_TARGET_TMPDIR"),
            "escape",
            &format!("{name}-{}", std::process::id()),
        );
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    /// A directory next to the config that no `[[mount]]` names (unless the test adds it).
    fn host_dir(&self, name: &str, mode: u32) -> PathBuf {
        let d = self.dir.join(name);
        fs::create_dir_all(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(mode)).unwrap();
        d
    }

    /// The host directory of `session`'s workspace (`<state>/work/<session>`).
    fn workspace(&self, session: &str) -> PathBuf {
        self.dir.join("state").join("work").join(session)
    }

    /// `boxmaker box exec --config FILE --session S [opts] -- argv...`, stdin closed.
    fn command(&self, session: &str, opts: &[&str], argv: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(["box", "exec", "--config"])
            .arg(&self.config)
            .args(["--session", session])
            .args(opts)
            .arg("--")
            .args(argv)
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `sh -c script` in `session`'s box and collects its output.
    fn sh(&self, session: &str, opts: &[&str], script: &str) -> Output {
        run(self.command(session, opts, &["/bin/sh", "-c", script]))
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Runs `cmd` to its end, collecting stdout and stderr; fails the test past [`CALL_DEADLINE`].
fn run(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = drain(child.stdout.take().unwrap());
    let err = drain(child.stderr.take().unwrap());
    let status = wait_deadline(&mut child, CALL_DEADLINE);
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn drain(mut r: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        v
    })
}

/// Waits for `child`, killing it and failing the test if it is not done within `limit`.
fn wait_deadline(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("boxmaker box exec still running after {limit:?}");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Asserts a box call exited 0 and returns its stdout.
fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "box exec failed: {:?}\nstdout: {}\nstderr: {}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Host processes whose command line contains `marker`.
fn host_processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmdline) = fs::read(e.path().join("cmdline")) {
            let cmdline = text(&cmdline).replace('\0', " ");
            if cmdline.contains(marker) {
                found.push(format!("{name}: {cmdline}"));
            }
        }
    }
    found
}

/// Asserts no host process carries `marker`, allowing a moment for the kernel to reap the
/// killed ones (a killed process is gone, or a zombie with no command line).
fn assert_no_survivor(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while !host_processes_with(marker).is_empty() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    let left = host_processes_with(marker);
    assert!(left.is_empty(), "survived the box: {left:?}");
}

/// A marker unique to this test process and `n`, usable as `sleep` seconds (`100.<digits>`).
fn marker(n: u32) -> String {
    format!("100.{}{n}", std::process::id())
}

/// Asserts the next call in the test's session works: a contained attack leaves the box usable.
fn assert_next_call_works(f: &Fixture) {
    assert_eq!(ok(&f.sh(&f.id, &[], "echo next")), "next\n");
}

fn assert_host_responsive() {
    let started = Instant::now();
    let st = Command::new("/bin/true").status().unwrap();
    assert!(st.success());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "host took {:?} to run /bin/true",
        started.elapsed()
    );
}

/// A world-readable host file holding `content` in `dir`.
fn host_file(dir: &Path, name: &str, content: &str, mode: u32) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, content).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
    p
}

#[test]
fn test_host_file_outside_mounts_read_fails() {
    let f = Fixture::new("host-file", "");
    let outside = f.host_dir("outside", 0o755);
    let secret = host_file(&outside, "secret.txt", "host-secret-1234", 0o644);

    let out = f.sh(
        &f.id,
        &[],
        &format!(
            "cat {}; echo rc=$?; cat /etc/shadow; echo rc=$?; cat {}; echo rc=$?",
            secret.display(),
            f.config.display()
        ),
    );

    let stdout = ok(&out);
    assert!(!stdout.contains("host-secret-1234"), "{stdout}");
    assert!(!stdout.contains("root:"), "read /etc/shadow: {stdout}");
    assert!(!stdout.contains("[gate]"), "read the config: {stdout}");
    assert_eq!(stdout.matches("rc=1").count(), 3, "{stdout}");
    assert_eq!(fs::read_to_string(&secret).unwrap(), "host-secret-1234");
}

#[test]
fn test_root_and_home_listing_fails() {
    let f = Fixture::new("root-home", "");
    let out = f.sh(
        &f.id,
        &[],
        "for d in /root /home; do echo \"== $d\"; ls -A \"$d\" 2>/dev/null; done; echo end; \
         ls -A /",
    );
    let stdout = ok(&out);
    // Absent or empty: nothing between the headers.
    assert!(stdout.starts_with("== /root\n== /home\nend\n"), "{stdout}");
    for hidden in [
        "root", "home", "boot", "var", "opt", "srv", "mnt", "sys", "run",
    ] {
        assert!(
            !stdout.lines().any(|l| l == hidden),
            "/{hidden} visible: {stdout}"
        );
    }
}

#[test]
fn test_readonly_mount_write_fails() {
    let f = Fixture::new("ro-mount", "");
    // World-writable on the host: only the read-only mount stands in the way.
    let data = f.host_dir("data", 0o777);
    let file = host_file(&data, "f.txt", "original", 0o666);
    f.configure("", &[(&data, "/data", false)]);

    let out = f.sh(
        &f.id,
        &[],
        "cat /data/f.txt; echo; echo changed > /data/f.txt; echo rc=$?; touch /data/new; \
         echo rc=$?; rm /data/f.txt; echo rc=$?; touch /usr/evil /etc/evil /evil; echo rc=$?",
    );

    let stdout = ok(&out);
    assert!(stdout.starts_with("original\n"), "{stdout}");
    assert_eq!(stdout.matches("rc=").count(), 4, "{stdout}");
    assert!(!stdout.contains("rc=0"), "{stdout}");
    assert_eq!(fs::read_to_string(&file).unwrap(), "original");
    assert!(!data.join("new").exists());
    for p in ["/usr/evil", "/etc/evil", "/evil"] {
        assert!(!Path::new(p).exists(), "{p} written on the host");
    }
}

#[test]
fn test_writable_mount_write_works() {
    let f = Fixture::new("rw-mount", "");
    let data = f.host_dir("data", 0o777);
    let file = host_file(&data, "f.txt", "original", 0o666);
    f.configure("", &[(&data, "/data", true)]);

    ok(&f.sh(&f.id, &[], "echo changed > /data/f.txt && touch /data/new"));

    assert_eq!(fs::read_to_string(&file).unwrap(), "changed\n");
    assert!(data.join("new").exists());
}

/// Runs a bash `/dev/tcp` connection to the host's loopback listener; true if it connected.
fn connect_from_box(f: &Fixture, opts: &[&str], listener: &TcpListener) -> bool {
    let port = listener.local_addr().unwrap().port();
    let script = format!("echo hello > /dev/tcp/127.0.0.1/{port} && echo connected; echo rc=$?");
    let out = run(f.command(&f.id, opts, &["/bin/bash", "-c", &script]));
    ok(&out).contains("connected")
}

#[test]
fn test_network_connect_to_host_loopback_fails() {
    let f = Fixture::new("net", "");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();

    assert!(!connect_from_box(&f, &[], &listener));
    assert!(
        listener.accept().is_err(),
        "the box reached the host's listener"
    );
}

#[test]
fn test_network_connect_with_network_flag_works() {
    let f = Fixture::new("net-on", "");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();

    assert!(connect_from_box(&f, &["--network"], &listener));
    assert!(listener.accept().is_ok());
}

#[test]
fn test_network_interface_other_than_lo_fails() {
    let f = Fixture::new("net-if", "");
    let stdout = ok(&f.sh(&f.id, &[], "cat /proc/net/dev"));
    let ifaces: Vec<&str> = stdout
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(str::trim)
        .collect();
    assert_eq!(ifaces, ["lo"]);
}

#[test]
fn test_mount_tmpfs_fails() {
    let f = Fixture::new("mount", "");
    let out = f.sh(
        &f.id,
        &[],
        "mount -t tmpfs none /tmp; echo rc=$?; \
         perl -e '($s, $t, $f) = (\"none\", \"/work\", \"tmpfs\"); $r = syscall(165, $s, $t, $f, 0, 0); \
         print \"mount=$r errno=\", $!+0, \"\\n\"'; \
         echo still-the-workspace > /work/after",
    );
    let stdout = ok(&out);
    assert!(
        stdout.contains("rc=") && !stdout.contains("rc=0"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("mount=-1 errno={EPERM}")),
        "{stdout}"
    );
    // /work is still the session's workspace on the host, not a tmpfs laid over it.
    assert_eq!(
        fs::read_to_string(f.workspace(&f.id).join("after")).unwrap(),
        "still-the-workspace\n"
    );
}

#[test]
fn test_unshare_user_namespace_fails() {
    let f = Fixture::new("unshare", "");
    let out = f.sh(
        &f.id,
        &[],
        "unshare -U true; echo rc=$?; unshare -Ur id; echo rc=$?; \
         perl -e '$r = syscall(272, 0x10000000); print \"unshare=$r errno=\", $!+0, \"\\n\"'",
    );
    let stdout = ok(&out);
    assert_eq!(stdout.matches("rc=").count(), 2, "{stdout}");
    assert!(!stdout.contains("rc=0"), "{stdout}");
    assert!(!stdout.contains("uid=0"), "{stdout}");
    assert!(
        stdout.contains(&format!("unshare=-1 errno={EPERM}")),
        "{stdout}"
    );
}

#[test]
fn test_ptrace_process_fails() {
    let f = Fixture::new("ptrace", "");
    let m = marker(1);
    // PTRACE_ATTACH (16) on our own child: allowed by plain Unix rules, denied by seccomp;
    // process_vm_readv (310) likewise.
    let out = f.sh(
        &f.id,
        &[],
        &format!(
            "sleep {m} & pid=$!; \
             perl -e '$r = syscall(101, 16, $ARGV[0], 0, 0); print \"ptrace=$r errno=\", $!+0, \"\\n\"' $pid; \
             perl -e '$r = syscall(310, $ARGV[0], 0, 1, 0, 1, 0); print \"vm_readv=$r errno=\", $!+0, \"\\n\"' $pid; \
             grep TracerPid /proc/$pid/status; kill $pid"
        ),
    );
    let stdout = ok(&out);
    assert!(
        stdout.contains(&format!("ptrace=-1 errno={EPERM}")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("vm_readv=-1 errno={EPERM}")),
        "{stdout}"
    );
    assert!(stdout.contains("TracerPid:\t0"), "{stdout}");
    assert_no_survivor(&m);
}

#[test]
fn test_proc_host_processes_visible_fails() {
    let f = Fixture::new("proc", "");
    let me = std::process::id();
    let mut host = Command::new("sleep").arg("30").spawn().unwrap();
    let host_pid = host.id();

    let out = f.sh(
        &f.id,
        &[],
        &format!(
            "ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '; echo; \
             cat /proc/{me}/cmdline; echo rc=$?; cat /proc/{host_pid}/cmdline; echo rc=$?; \
             kill -0 {host_pid}; echo rc=$?"
        ),
    );

    host.kill().unwrap();
    host.wait().unwrap();
    let stdout = ok(&out);
    let first = stdout.lines().next().unwrap_or("");
    let pids: Vec<u32> = first
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert!(!pids.contains(&me), "the test's pid {me} visible: {pids:?}");
    assert!(!pids.contains(&host_pid), "host pid visible: {pids:?}");
    // Only the box's own few processes (its init, the shell, ls, grep, tr).
    assert!(
        pids.contains(&1) && pids.len() <= 6 && pids.iter().all(|&p| p < 64),
        "box sees pids {pids:?}"
    );
    assert_eq!(stdout.matches("rc=1").count(), 3, "{stdout}");
    assert!(!stdout.contains("sleep"), "{stdout}");
}

#[test]
fn test_bpf_load_fails() {
    let f = Fixture::new("bpf", "");
    // BPF_MAP_CREATE (0) of a small hash map, and BPF_PROG_LOAD (5) of `r0 = 0; exit` as a
    // socket filter: both refused.
    let out = f.sh(
        &f.id,
        &[],
        "perl -e '$a = pack(\"LLLL\", 1, 4, 4, 16) . (\"\\0\" x 64); $r = syscall(321, 0, $a, length($a)); \
         print \"map=$r errno=\", $!+0, \"\\n\"; \
         $insns = pack(\"CCsl\", 0xb7, 0, 0, 0) . pack(\"CCsl\", 0x95, 0, 0, 0); \
         $lic = \"GPL\\0\"; \
         $p = pack(\"LLQQ\", 1, 2, unpack(\"Q\", pack(\"p\", $insns)), unpack(\"Q\", pack(\"p\", $lic))) . (\"\\0\" x 96); \
         $r = syscall(321, 5, $p, length($p)); print \"prog=$r errno=\", $!+0, \"\\n\"'",
    );
    let stdout = ok(&out);
    assert!(
        stdout.contains(&format!("map=-1 errno={EPERM}")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("prog=-1 errno={EPERM}")),
        "{stdout}"
    );
}

#[test]
fn test_fork_bomb_fails() {
    let f = Fixture::new("fork-bomb", "max_processes = 24\ntimeout_seconds = 3");
    let m = marker(2);

    // A real fork bomb: the call ends (at the latest at the wall-clock timeout), the host
    // answers meanwhile, nothing of it survives, and the next call works.
    let started = Instant::now();
    // `fork while 1`: every process forks forever, and a failed fork is simply retried.
    let mut bomb = f
        .command(&f.id, &[], &["/usr/bin/perl", "-e", "fork while 1", &m])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    thread::sleep(Duration::from_millis(500));
    assert_host_responsive();
    // The bomb runs, held at the limit (its processes, plus the `box exec` process whose
    // arguments carry the marker too).
    let running = host_processes_with(&m);
    assert!(
        running.len() >= 12 && running.len() <= 24 + 1,
        "{} bomb processes: {running:?}",
        running.len()
    );
    let status = wait_deadline(&mut bomb, Duration::from_secs(30));
    // The bomb never exits by itself: the wall-clock timeout ends the box.
    assert_eq!(status.code(), Some(124), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_no_survivor(&m);
    assert_host_responsive();
    assert_next_call_works(&f);

    // Counted: 200 forks that stay alive, and the box never holds more than the limit.
    let out = f.sh(
        &f.id,
        &[],
        &format!(
            "perl -e 'for (1..200) {{ $p = fork(); if (defined $p && $p == 0) {{ $0 = \"{m}\"; sleep 3000; exit }} }} \
             @p = glob(\"/proc/[0-9]*\"); print scalar(@p), \"\\n\"'"
        ),
    );
    let count: u32 = ok(&out).trim().parse().unwrap();
    assert!(
        (12..=24).contains(&count),
        "{count} processes in a box limited to 24"
    );
    assert_no_survivor(&m);
    assert_next_call_works(&f);
}

#[test]
fn test_memory_bomb_fails() {
    let f = Fixture::new("mem-bomb", "memory_bytes = 67108864\ntimeout_seconds = 20");
    let started = Instant::now();
    let out = f.sh(
        &f.id,
        &[],
        "perl -e '$x = \"a\" x (512 * 1024 * 1024); print \"allocated\\n\"'; echo rc=$?; \
         python3 -c 'b = bytearray(512 << 20); print(\"allocated\")'; echo rc=$?",
    );
    let stdout = ok(&out);
    assert!(!stdout.contains("allocated"), "{stdout}");
    assert_eq!(stdout.matches("rc=").count(), 2, "{stdout}");
    assert!(!stdout.contains("rc=0"), "{stdout}");
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_host_responsive();

    // File pages in the box's tmpfs are outside the address-space limit: the memory cgroup
    // ends the box instead.
    let out = f.sh(
        &f.id,
        &[],
        "head -c 50000000 /dev/zero > /tmp/a; head -c 50000000 /dev/zero > /dev/shm/b; \
         echo survived",
    );
    assert!(!text(&out.stdout).contains("survived"), "{out:?}");
    assert!(!out.status.success());
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_host_responsive();
    assert_next_call_works(&f);
}

#[test]
fn test_file_over_size_limit_fails() {
    let f = Fixture::new("fsize", "file_size_bytes = 1048576");
    let out = f.sh(
        &f.id,
        &[],
        "head -c 2000000 /dev/zero > /work/big; echo rc=$?; \
         head -c 1000 /dev/zero > /work/small; echo rc=$?",
    );
    let stdout = ok(&out);
    let rcs: Vec<&str> = stdout.lines().collect();
    assert_eq!(rcs.len(), 2, "{stdout}");
    assert_ne!(rcs[0], "rc=0", "{stdout}");
    assert_eq!(rcs[1], "rc=0", "{stdout}");
    let big = fs::metadata(f.workspace(&f.id).join("big")).unwrap().len();
    assert!(big <= 1_048_576, "host sees {big} bytes");
    assert_eq!(big, 1_048_576, "the write stops at the limit");
    assert_eq!(
        fs::metadata(f.workspace(&f.id).join("small"))
            .unwrap()
            .len(),
        1000
    );
}

#[test]
fn test_output_flood_hang_fails() {
    // `box exec` gives the command this process's stdout itself: 100 MB are streamed, not
    // kept, and the reader here keeps at most one buffer.
    let f = Fixture::new("flood", "timeout_seconds = 60");
    let started = Instant::now();
    let mut child = f
        .command(
            &f.id,
            &[],
            &[
                "/bin/sh",
                "-c",
                "head -c 100000000 /dev/zero; echo done >&2",
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0u64;
        let mut nonzero = false;
        loop {
            match stdout.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    total += n as u64;
                    nonzero |= buf[..n].iter().any(|&b| b != 0);
                }
            }
        }
        (total, nonzero)
    });
    let err = drain(child.stderr.take().unwrap());
    let status = wait_deadline(&mut child, Duration::from_secs(45));
    let (total, nonzero) = reader.join().unwrap();
    let stderr = text(&err.join().unwrap());
    assert!(status.success(), "{status:?} {stderr}");
    assert_eq!(total, 100_000_000, "streamed in full");
    assert!(!nonzero);
    assert!(stderr.contains("done"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(45));
}

#[test]
fn test_output_flood_to_closed_reader_hang_fails() {
    // A reader that stops after 1 MB: the box does not block forever on a full pipe.
    let f = Fixture::new("flood-closed", "timeout_seconds = 60");
    let m = marker(3);
    let started = Instant::now();
    let mut child = f
        .command(
            &f.id,
            &[],
            &[
                "/bin/sh",
                "-c",
                &format!(": {m}; head -c 100000000 /dev/zero"),
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = vec![0u8; 1 << 20];
    stdout.read_exact(&mut buf).unwrap();
    drop(stdout);
    let status = wait_deadline(&mut child, Duration::from_secs(20));
    assert!(!status.success(), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_no_survivor(&m);
}

#[test]
fn test_workspace_symlink_to_host_path_fails() {
    let f = Fixture::new("symlink", "");
    let outside = f.host_dir("outside", 0o755);
    let secret = host_file(&outside, "secret.txt", "host-secret-5678", 0o666);
    let ws = f.workspace(&f.id);
    ok(&f.sh(&f.id, &[], "true"));
    // Planted on the host, as a cloned repository could carry them.
    symlink(&secret, ws.join("link")).unwrap();
    symlink("/etc/shadow", ws.join("shadow")).unwrap();
    symlink(&outside, ws.join("dir")).unwrap();

    let out = f.sh(
        &f.id,
        &[],
        &format!(
            "cat /work/link; echo rc=$?; cat /work/shadow; echo rc=$?; ls /work/dir/; echo rc=$?; \
             echo pwned > /work/link; echo rc=$?; \
             ln -s {} /work/made; cat /work/made; echo rc=$?; echo pwned > /work/made; echo rc=$?",
            secret.display()
        ),
    );

    let stdout = ok(&out);
    assert!(
        !stdout.contains("host-secret-5678")
            && !stdout.contains("root:")
            && !stdout.contains("secret.txt"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("rc=").count(), 6, "{stdout}");
    assert!(!stdout.contains("rc=0"), "{stdout}");
    assert_eq!(fs::read_to_string(&secret).unwrap(), "host-secret-5678");
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 1);
}

#[test]
fn test_other_session_workspace_read_fails() {
    let f = Fixture::new("sessions", "");
    ok(&f.sh("alice", &[], "echo alice-secret-42 > /work/a.txt"));
    let a_ws = f.workspace("alice");
    let a_file = a_ws.join("a.txt");
    assert_eq!(fs::read_to_string(&a_file).unwrap(), "alice-secret-42\n");
    ok(&f.sh("bob", &[], "true"));
    // A link planted on the host in bob's workspace, to alice's file and workspace.
    symlink(&a_file, f.workspace("bob").join("to-a")).unwrap();
    symlink(&a_ws, f.workspace("bob").join("to-a-dir")).unwrap();

    let out = f.sh(
        "bob",
        &[],
        &format!(
            "cat /work/../alice/a.txt; echo rc=$?; \
             cat {a}; echo rc=$?; \
             cat {state}/work/alice/a.txt; echo rc=$?; \
             ls -A /work/.. {ws}; echo rc=$?; \
             cat /work/to-a /work/to-a-dir/a.txt; echo rc=$?; \
             ln -s {a} /work/made; cat /work/made; echo rc=$?; \
             cat /proc/1/root/../alice/a.txt /proc/self/cwd/../alice/a.txt; echo rc=$?; \
             echo pwned > /work/../alice/a.txt; echo pwned > {a}; echo pwned > /work/to-a; echo rc=$?",
            a = a_file.display(),
            ws = a_ws.display(),
            state = f.dir.join("state").display()
        ),
    );

    let stdout = ok(&out);
    assert!(
        !stdout.contains("alice-secret-42") && !stdout.contains("a.txt"),
        "{stdout}"
    );
    assert!(
        !stdout.lines().any(|l| l == "alice" || l == "bob"),
        "a session directory is visible: {stdout}"
    );
    assert_eq!(stdout.matches("rc=").count(), 8, "{stdout}");
    assert!(!stdout.contains("rc=0"), "{stdout}");
    assert_eq!(fs::read_to_string(&a_file).unwrap(), "alice-secret-42\n");
    // Alice still sees her own file: the test can fail.
    assert_eq!(
        ok(&f.sh("alice", &[], "cat /work/a.txt")),
        "alice-secret-42\n"
    );
}

#[test]
fn test_status_without_no_new_privs_and_seccomp_fails() {
    let f = Fixture::new("status", "");
    let stdout = ok(&f.sh(
        &f.id,
        &[],
        "grep -E '^(NoNewPrivs|Seccomp|CapEff):' /proc/self/status",
    ));
    assert!(stdout.contains("NoNewPrivs:\t1"), "{stdout}");
    assert!(stdout.contains("Seccomp:\t2"), "{stdout}");
    assert!(stdout.contains("CapEff:\t0000000000000000"), "{stdout}");
}

#[test]
fn test_uid_root_fails() {
    let f = Fixture::new("uid", "");
    let stdout = ok(&f.sh(
        &f.id,
        &[],
        "id -u; id -g; cat /proc/self/uid_map; touch /work/mine",
    ));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_ne!(lines[0], "0", "{stdout}");
    assert_ne!(lines[1], "0", "{stdout}");
    let map: Vec<u64> = lines[2]
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(map.len(), 3, "{stdout}");
    assert_ne!(map[1], 0, "box user maps to host root: {stdout}");
    // What the box writes belongs to that unprivileged host uid, not to root.
    let owner = fs::metadata(f.workspace(&f.id).join("mine")).unwrap().uid();
    assert_ne!(owner, 0);
    assert_eq!(u64::from(owner), map[1]);
}

#[test]
fn test_environment_caller_variable_leak_fails() {
    let f = Fixture::new("env", "");
    let mut cmd = f.command(&f.id, &[], &["/usr/bin/env"]);
    cmd.env("FAKE_API_KEY", "sk-test-123")
        .env("OPENAI_API_KEY", "sk-test-456");
    let out = run(cmd);
    let env = ok(&out);
    assert!(
        !env.contains("API_KEY") && !env.contains("sk-test-"),
        "{env}"
    );
    let mut names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
    names.sort_unstable();
    assert_eq!(names, ["HOME", "LANG", "PATH", "TERM"], "{env}");
}

#[test]
fn test_timeout_grandchild_survival_fails() {
    let f = Fixture::new("timeout", "timeout_seconds = 2");
    let (m1, m2, m3) = (marker(4), marker(5), marker(6));
    let started = Instant::now();
    let out = f.sh(
        &f.id,
        &[],
        &format!("sleep {m1} & (setsid sleep {m2} > /dev/null 2>&1 &); sleep {m3}"),
    );
    assert_eq!(out.status.code(), Some(124), "{}", text(&out.stderr));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "{took:?}"
    );
    for m in [&m1, &m2, &m3] {
        assert_no_survivor(m);
    }
    assert_next_call_works(&f);
}
