//! `boxmaker auth`: signing in to remote MCP servers with OAuth (docs/spec.md §3.9,
//! "Signing in"; the flow lives in `mcpclient::oauth`).
//!
//! - `auth login NAME` — prints the URL to open (and opens a browser where there is one:
//!   `xdg-open` on `PATH` with `DISPLAY` or `WAYLAND_DISPLAY` set), waits for the redirect on
//!   `127.0.0.1`, and seals the tokens in the state directory. When the rules do not clear a
//!   host the sign-in needs (the authorization server is often another host than the MCP
//!   server), it stops before connecting there and prints the `[[egress]]` rules to add.
//! - `auth status [NAME]` — signed in or not, when the token expires, its scopes; never a
//!   token.
//! - `auth logout NAME` — revokes the tokens where the authorization server offers RFC 7009
//!   revocation, and removes them here.
//!
//! Only this command opens a browser: a call that needs a sign-in fails at once, naming
//! `boxmaker auth login`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mcpclient::oauth::{self, LoginOptions, OAuthError, Status};
use runner::Runner;

use crate::error::CliError;

/// Sign in to remote MCP servers (OAuth), see where you are signed in, sign out.
#[derive(Debug, clap::Args)]
pub struct AuthArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME, global = true)]
    config: PathBuf,
    #[command(subcommand)]
    what: AuthCommand,
}

#[derive(Debug, clap::Subcommand)]
enum AuthCommand {
    /// Sign in to a remote tool: prints the URL to open, waits for the sign-in to come back.
    Login {
        /// The [[tool]] (with `url` and `oauth`).
        #[arg(value_name = "NAME")]
        name: String,
        /// A scope to ask for besides those the config or the server names (repeatable).
        #[arg(long = "scope", value_name = "SCOPE")]
        scopes: Vec<String>,
        /// How long to wait for the sign-in, in seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 300)]
        wait: u64,
        /// Only print the URL; never open a browser.
        #[arg(long)]
        no_browser: bool,
    },
    /// Whether each remote tool (or NAME) is signed in, until when, with which scopes.
    Status {
        #[arg(value_name = "NAME")]
        name: Option<String>,
    },
    /// Sign out of a remote tool: revoke its tokens where the server offers that, and remove
    /// them.
    Logout {
        #[arg(value_name = "NAME")]
        name: String,
    },
}

fn oauth_err(e: OAuthError) -> CliError {
    CliError::Local(e.to_string())
}

pub fn run(args: &AuthArgs) -> Result<u8, CliError> {
    let cfg = Arc::new(config::load(&args.config)?);
    crate::host::create_state_dir(&cfg.gate.state)?;
    let runner = Runner::to_describe(cfg.clone(), &cfg.gate.state)?;
    match &args.what {
        AuthCommand::Login {
            name,
            scopes,
            wait,
            no_browser,
        } => login(&runner, name, scopes, *wait, *no_browser),
        AuthCommand::Status { name } => status(&runner, name.as_deref()),
        AuthCommand::Logout { name } => {
            let out = oauth::logout(&runner, name).map_err(oauth_err)?;
            if !out.had {
                outln!("{name}: was not signed in; nothing to remove");
                return Ok(0);
            }
            match out.revoked {
                Some(Ok(())) => outln!(
                    "{name}: signed out; the authorization server revoked its tokens and they \
                     were removed here"
                ),
                Some(Err(why)) => outln!(
                    "{name}: signed out here (the tokens were removed), but revoking them failed: \
                     {why}; they stay valid at the server until they expire"
                ),
                None => outln!(
                    "{name}: signed out here (the tokens were removed); the authorization server \
                     offers no revocation (RFC 7009), so they stay valid there until they expire"
                ),
            }
            Ok(0)
        }
    }
}

fn login(
    runner: &Runner,
    name: &str,
    scopes: &[String],
    wait: u64,
    no_browser: bool,
) -> Result<u8, CliError> {
    if let Some(bad) = scopes.iter().find(|s| !config::remote::is_scope_token(s)) {
        return Err(CliError::Local(format!(
            "--scope {bad:?} is not a scope token (visible ASCII, no space, quote or backslash)"
        )));
    }
    let opts = LoginOptions {
        wait: Duration::from_secs(wait.max(1)),
        scopes: scopes.to_vec(),
    };
    let mut on_url = |url: &str| {
        errln!("Open this URL in your browser to sign in to {name} (waiting up to {wait} s):");
        outln!("{url}");
        if !no_browser {
            open_browser(url, runner.config());
        }
    };
    match oauth::login(runner, name, &opts, &mut on_url) {
        Ok(g) => {
            let expires = g
                .expires_at
                .map(|e| crate::when::expires(proto::Timestamp(e)))
                .unwrap_or_else(|| "no expiry given".into());
            outln!(
                "{name}: signed in at {}{}; the token {expires}{}; scopes: {}",
                g.issuer,
                if g.registered {
                    " (boxmaker registered itself as a client)"
                } else {
                    ""
                },
                if g.refreshes {
                    ", and refreshes itself"
                } else {
                    ", with no refresh token (sign in again then)"
                },
                scopes_text(&g.scopes)
            );
            Ok(0)
        }
        Err(OAuthError::Unreachable {
            what,
            dest,
            why,
            rules,
        }) => {
            let file = runner
                .config()
                .file
                .as_ref()
                .map(|f| std::path::absolute(f).unwrap_or_else(|_| f.clone()))
                .map(|f| f.display().to_string())
                .unwrap_or_else(|| config::FILE_NAME.into());
            // The rules on stdout, as TOML a person (or a script) appends to the config.
            outln!("# egress rules the sign-in of {name} needs ({dest}, {what}):");
            for r in &rules {
                outln!("{}", r.toml());
            }
            let tool_names = runner
                .config()
                .tool(name)
                .and_then(|t| t.egress.as_ref())
                .map(|_| " (the tool lists its rules in `egress = [...]`: name them there too)")
                .unwrap_or("");
            Err(CliError::Local(format!(
                "the sign-in cannot reach {dest} ({what}): {why}; add the [[egress]] rules printed \
                 above to {file}{tool_names} and run `boxmaker auth login {name}` again"
            )))
        }
        Err(e) => Err(oauth_err(e)),
    }
}

fn scopes_text(s: &[String]) -> String {
    if s.is_empty() {
        "none named".into()
    } else {
        s.join(" ")
    }
}

/// Opens `url` in the person's browser where there is one; never fails. `xdg-open` is the
/// first on `PATH` (absolute directories only) and is not run at all when that one lies in a
/// mount a box may write: a box could have put it there (docs/spec.md §3.5).
fn open_browser(url: &str, config: &config::Config) {
    let display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
    if !display {
        return;
    }
    let Some(program) = std::env::var_os("PATH").and_then(|p| browser_opener(&p, config)) else {
        return;
    };
    let _ = std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// The `xdg-open` that `path` (a `PATH` value) finds first among its absolute directories,
/// or `None` when there is none or it lies, as written or resolved, in a mount a box may
/// write.
fn browser_opener(path: &std::ffi::OsStr, config: &config::Config) -> Option<PathBuf> {
    let program = std::env::split_paths(path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join("xdg-open"))
        .find(|f| f.is_file())?;
    let real = std::fs::canonicalize(&program).unwrap_or_else(|_| program.clone());
    let boxes_write = config.mounts.iter().filter(|m| m.write).any(|m| {
        let host = std::fs::canonicalize(&m.host).unwrap_or_else(|_| m.host.clone());
        program.starts_with(&m.host) || real.starts_with(&host)
    });
    (!boxes_write).then_some(program)
}

fn status(runner: &Runner, name: Option<&str>) -> Result<u8, CliError> {
    let names: Vec<String> = match name {
        Some(n) => vec![n.to_string()],
        None => oauth::oauth_tools(runner.config())
            .iter()
            .map(|t| t.name.clone())
            .collect(),
    };
    if names.is_empty() {
        outln!("no remote tool signs in with OAuth (`oauth = true` on a [[tool]] with `url`)");
        return Ok(0);
    }
    let mut missing = 0;
    for n in &names {
        match oauth::status(runner, n).map_err(oauth_err)? {
            Status::SignedIn {
                issuer,
                scopes,
                expires_at,
                refreshes,
                step_up,
            } => {
                let now = crate::when::now();
                let expiry = match expires_at {
                    Some(e) if e <= now.0 && !refreshes => {
                        format!(
                            "its token expired {}; sign in again with `{}`",
                            crate::when::at(proto::Timestamp(e)),
                            oauth::login_command(runner, n)
                        )
                    }
                    Some(e) => format!("its token {}", crate::when::expires(proto::Timestamp(e))),
                    None => "its token has no expiry given".into(),
                };
                let wider = if step_up.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; the server asked for more ({}): sign in again",
                        step_up.join(" ")
                    )
                };
                outln!(
                    "{n}: signed in at {issuer}; {expiry}{}; scopes: {}{wider}",
                    if refreshes {
                        ", refreshed as needed"
                    } else {
                        ""
                    },
                    scopes_text(&scopes)
                );
            }
            Status::NotSignedIn => {
                missing += 1;
                outln!(
                    "{n}: not signed in: run `{}`",
                    oauth::login_command(runner, n)
                );
            }
            Status::Unusable(why) => {
                missing += 1;
                outln!("{n}: {why}");
            }
        }
    }
    Ok(u8::from(missing > 0))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_browser_opener_is_never_one_a_box_could_have_put_on_path() {
        let dir = tempfile::tempdir().unwrap();
        let planted = dir.path().join("proj/bin");
        let system = dir.path().join("usr/bin");
        for d in [&planted, &system] {
            std::fs::create_dir_all(d).unwrap();
            let f = d.join("xdg-open");
            std::fs::write(&f, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = std::env::join_paths([&planted, &system]).unwrap();
        let mount = |write: bool| {
            format!(
                "[[mount]]\nhost = {:?}\nat = \"/src\"\nwrite = {write}\nread_only = []\n",
                dir.path().join("proj").display().to_string()
            )
        };
        let cfg = |text: &str| config::parse(text, "boxmaker.toml", dir.path()).unwrap();
        // Read-only, or no mount: the first on PATH.
        assert_eq!(
            browser_opener(&path, &cfg(&mount(false))),
            Some(planted.join("xdg-open"))
        );
        // Where a box may write it: not run at all (never a later one in its place: the
        // person's PATH says that one comes first).
        assert_eq!(browser_opener(&path, &cfg(&mount(true))), None);
        // Relative directories of PATH are never looked in.
        assert_eq!(
            browser_opener(std::ffi::OsStr::new("proj/bin"), &cfg("")),
            None
        );
    }
}
