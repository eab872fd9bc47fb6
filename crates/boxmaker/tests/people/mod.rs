//! People and a repository's attacker, each with a home of their own, for the tests of what a
//! repository can ship (`shipped_state.rs`, `shipped_config.rs`; docs/spec.md §6, "Whose
//! state" and "Whose config"): one test's directory, run as root or as uid 1000
//! ([`testkit::As`]), every process of it killed when it is dropped. Each test file adds the
//! commands of its own (`impl World` in the file).

#![allow(dead_code)]

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use testkit::{As, fresh_dir, open_to_everyone, pid_gone, pids_with, wait_until};

pub const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

/// Whose environment a boxmaker command runs in: HOME (`None`: unset) and XDG_STATE_HOME
/// (`None`: unset).
#[derive(Debug, Clone)]
pub struct Person {
    pub home: Option<PathBuf>,
    pub xdg_state: Option<OsString>,
}

/// One test's directory (homes, projects and repositories in it), run as `who`.
pub struct World {
    pub dir: PathBuf,
    pub who: As,
}

impl World {
    /// A fresh `CARGO_TARGET_TMPDIR/GROUP/NAME-WHO`, open to the user boxmaker runs as.
    pub fn fresh(group: &str, name: &str, who: As) -> World {
        let dir = fresh_dir(
            env!("CARGO_TARGET_TMPDIR"),
            group,
            &format!("{name}-{who:?}"),
        );
        open_to_everyone(&dir, env!("CARGO_TARGET_TMPDIR"));
        World { dir, who }
    }

    /// Gives `path` (and all below it, links as they are) to the user boxmaker runs as.
    pub fn give(&self, path: &Path) {
        if self.who == As::User {
            let ok = Command::new("chown")
                .args(["-hR", "1000:1000"])
                .arg(path)
                .status()
                .unwrap();
            assert!(ok.success(), "chown {}", path.display());
        }
    }

    /// A person with a home of their own, `DIR/NAME-home` (XDG_STATE_HOME unset), who has
    /// never run boxmaker.
    pub fn person(&self, name: &str) -> Person {
        let home = self.dir.join(format!("{name}-home"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
        self.give(&home);
        Person {
            home: Some(home),
            xdg_state: None,
        }
    }

    /// The binary, as `who`, in `cwd`, in `person`'s environment alone: HOME and
    /// XDG_STATE_HOME theirs, the MCP clients' variables removed (their files are found
    /// from HOME and `cwd`).
    pub fn as_person(&self, person: &Person, cwd: &Path) -> Command {
        let mut c = self.who.command(BIN);
        c.current_dir(cwd)
            .env_remove("HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME");
        if let Some(h) = &person.home {
            c.env("HOME", h);
        }
        if let Some(x) = &person.xdg_state {
            c.env("XDG_STATE_HOME", x);
        }
        c
    }

    /// Stops every boxmaker process of this test (an on-demand gate lingers after the
    /// command that started it), politely: a gate signs its checkpoint and closes its
    /// database.
    pub fn stop_gates(&self) {
        let pids: Vec<u32> = pids_with(&format!("{}/", self.dir.display()))
            .into_iter()
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).starts_with(BIN))
            })
            .collect();
        signal(&pids, "-TERM");
        wait_until("the test's gates stop", Duration::from_secs(30), || {
            pids.iter().all(|p| pid_gone(*p))
        });
    }
}

impl Drop for World {
    fn drop(&mut self) {
        signal(&pids_with(&format!("{}/", self.dir.display())), "-KILL");
    }
}

/// `kill SIG PID` for each of `pids` (one already gone is no error).
pub fn signal(pids: &[u32], sig: &str) {
    for pid in pids {
        let _ = Command::new("kill")
            .args([sig, &pid.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}
