//! # sandbox — the box every tool runs in (docs/spec.md §4)
//!
//! **Owns:** building a Linux box around one command and running it there: user, mount, pid,
//! ipc, uts, cgroup and (unless `network`) network namespaces, the last with only `lo` and,
//! for a `proxy` box, a listener on it handed to the caller (the box's one way out); `pivot_root` into a fresh,
//! read-only tmpfs root holding read-only binds of the system, the workspace at `/work`, the
//! extra mounts, a private `/tmp`, a fresh `/proc` and a minimal `/dev`; an unprivileged box
//! user (uid 1000, never host root); all capabilities dropped; `no_new_privs`; a seccomp
//! filter; landlock rules repeating the mount table; rlimits and cgroup limits; a wall-clock
//! timeout that kills the whole pid namespace; an environment built from scratch; and
//! `doctor`, which reports which of these the machine enforces.
//!
//! **Must never:** depend on another boxmaker crate; pass anything of the caller's
//! environment that the spec does not name; silently run with less protection than required
//! (a required protection that is unavailable is an [`Error`]); fork with namespace flags from
//! a multi-threaded process (a fresh, single-threaded helper process does that, or the caller
//! itself after checking it has one thread); leave a box or its cgroup behind after [`run`]
//! returns; buffer more output than the cap.
//!
//! **Process model.** [`run`] (in the caller, any number of threads) starts the caller's own
//! binary again with [`HELPER_ARG`]; that binary calls [`enter_helper_if_requested`] (or
//! [`helper_main`]) first thing in `main`. The helper reads the [`Spec`] from fd 3, clones
//! the box's init into new namespaces, supervises it, and answers with how it ended.
//!
//! ```text
//! caller ──spawn──▶ helper (host side: cgroup, id maps, timeout) ──clone(NEW*)──▶ init (pid 1)
//!    ◀── fd 3: Spec / Report ──▶                                  └─posix_spawn──▶ command
//! ```
//!
//! A single-threaded caller running a box on its own terminal (`boxmaker box exec`) can skip
//! the helper's exec: [`run_in_process`] does the helper's work in the caller itself (same
//! steps, same checks) and falls back to [`run`] otherwise.
//!
//! **Modules, in reading order:**
//! - `error` — the crate's error enum.
//! - `sys` — the only place with system calls: thin `unsafe` wrappers, one error helper.
//! - `spec` — [`Spec`], [`Limits`], [`Mount`], [`Io`], [`Requirements`] and their defaults.
//! - `mounts` — the mount table as data ([`mount_table`]).
//! - `seccomp` — the seccomp filter as a reviewed table, and the socket families a box may
//!   open.
//! - `landlock` — landlock rules derived from the mount table.
//! - `cgroup` — the per-box memory and pids cgroup: a random name, its owner's lock, and
//!   the sweep of dead owners' cgroups (safe across pid namespaces).
//! - `child` — the box's init: the ordered, fail-closed setup script.
//! - `helper` — the helper process: supervision, timeout, cleanup, [`Report`].
//! - `run` — the caller's side: [`run`], [`Outcome`], output capture; [`spawn`] and
//!   [`BoxProcess`] for a box that keeps running (a server on the command's stdio);
//!   [`Stopper`], which ends a running box from another thread ([`run_stoppable`]).
//! - `doctor` — [`doctor`] and its [`DoctorReport`].
//! - `splice` — [`SplicePipe`]: zero-copy relaying between two sockets, for the runner's
//!   egress proxy (here only because this is the crate with `unsafe`).
//! - `floor` — `bench_floor`, the bare namespace + landlock + seccomp calls with this
//!   crate's data, the floor `bench/box-startup.sh` compares boxes with (not a sandbox).

mod cgroup;
mod child;
mod doctor;
mod error;
mod floor;
mod helper;
mod landlock;
mod mounts;
mod pool;
mod run;
mod seccomp;
mod spec;
mod splice;
mod sys;

pub use cgroup::{address_space_limit, memory_cgroup};
pub use doctor::{Check, DoctorReport, doctor};
pub use error::{Error, Result};
#[doc(hidden)]
pub use floor::bench_floor;
pub use helper::{Report, Status, helper_main};
pub use mounts::{MountEntry, MountKind, describe as describe_mounts, mount_table};
pub use pool::{HELPER_NAME, HelperPool, IDLE_HELPERS, ZYGOTE_FLAG};
pub use run::{
    BoxProcess, HELPER_ARG, HelperCommand, Outcome, Stopper, enter_helper_if_requested, run,
    run_in_process, run_stoppable, run_with_listener, spawn,
};
pub use spec::{
    BOX_UID, DEFAULT_ROOT_HOST_ID, Io, Limits, MAX_SPEC_BYTES, Mount, PROXY_ADDR, Requirements,
    Spec,
};
pub use splice::{SPLICE_PIPE_BYTES, SplicePipe};
pub use sys::{raise_open_files_limit, seal_inherited_descriptors};
