//! `boxmaker trust [--config FILE]`: the person's word that a config is theirs (docs/spec.md
//! §6, "Whose config"). Every other command uses a config only when the person trusted it
//! at that path with those very bytes: a repository can ship a `boxmaker.toml` of its own.
//! Only a config that loads is trusted; what is recorded is the hash of the bytes that were
//! checked.

use std::path::PathBuf;

use crate::error::CliError;

/// Say that a config is yours: boxmaker uses it until a byte of it changes.
#[derive(Debug, clap::Args)]
pub struct TrustArgs {
    /// The config file to trust (read it first: it says what runs without asking).
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
    /// Take your word back: boxmaker uses the config no more until you trust it again.
    #[arg(long, conflicts_with = "diff")]
    revoke: bool,
    /// Show what changed since you last trusted it, and trust nothing.
    #[arg(long)]
    diff: bool,
}

pub fn run(args: &TrustArgs) -> Result<(), CliError> {
    if args.revoke {
        let path = statedir::trust::bound_path(&args.config)?;
        if statedir::trust::forget(&path)? {
            outln!("no longer trusted: {}", path.display());
        } else {
            outln!("{} was not trusted; nothing changed", path.display());
        }
        return Ok(());
    }
    if args.diff {
        return show_diff(args);
    }
    let (cfg, text) = config::load_untrusted(&args.config)?;
    config::trust(&args.config, &text)?;
    let path = statedir::trust::bound_path(&args.config)?;
    let sha = statedir::trust::sha256_hex(text.as_bytes());
    let sha = sha.get(..16).unwrap_or(&sha);
    let writable = cfg.mounts.iter().filter(|m| m.write).count();
    outln!(
        "trusted {} (sha256 {sha}…): {} tools, {} grants, {} mounts ({writable} writable), {} \
         egress rules, state in {}",
        path.display(),
        cfg.tools.len(),
        cfg.grants.len(),
        cfg.mounts.len(),
        cfg.egress.len(),
        cfg.gate.state.display()
    );
    // What a box could still make in a mount it may write (docs/spec.md §4, "What a
    // writable mount keeps"): said now, while the person reads what they trust.
    for m in cfg.mounts.iter().filter(|m| m.write) {
        if m.read_only.is_empty() {
            outln!(
                "the writable mount {} keeps nothing read-only: a box may change its .git and \
                 every file there",
                m.at.display()
            );
            continue;
        }
        let absent: Vec<String> = m
            .read_only
            .iter()
            .filter(|n| {
                std::fs::symlink_metadata(m.host.join(n)).map_or(true, |md| md.is_symlink())
            })
            .map(|n| n.display().to_string())
            .collect();
        if !absent.is_empty() {
            outln!(
                "the writable mount {} keeps what is there of its read_only; a box could make \
                 what is not: {} (what you make yourself there, an empty .claude directory \
                 say, boxes cannot change)",
                m.at.display(),
                absent.join(" ")
            );
        }
        if m.read_only
            .iter()
            .any(|n| n == std::path::Path::new(".git"))
        {
            let nested = runner::gitkeep::nested(&m.host);
            if !nested.repos.is_empty() {
                let shown: Vec<String> = nested
                    .repos
                    .iter()
                    .take(8)
                    .map(|r| r.display().to_string())
                    .collect();
                let more = nested.repos.len().saturating_sub(shown.len());
                outln!(
                    "the writable mount {} holds {} repositories ({}{}): each one's .git, and \
                     what the read_only list names in it, is kept as the mount's top is; a \
                     repository a box makes there is the box's — read its .git/config before \
                     you run git in it",
                    m.at.display(),
                    nested.repos.len(),
                    shown.join(" "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                );
            }
            if nested.cut {
                outln!(
                    "{} holds more than the {} directories boxmaker looks through for the \
                     repositories inside it, so no box may write it (mount a smaller \
                     directory)",
                    m.at.display(),
                    runner::gitkeep::NESTED_DIRS
                );
            }
        }
    }
    outln!(
        "boxmaker uses it until a byte of it changes; `boxmaker check --config {}` shows what \
         it allows",
        path.display()
    );
    Ok(())
}

/// `--diff`: what changed since the person last trusted the config at this path.
fn show_diff(args: &TrustArgs) -> Result<(), CliError> {
    let path = statedir::trust::bound_path(&args.config)?;
    let now = std::fs::read(&args.config).map_err(|source| CliError::State {
        path: path.clone(),
        source,
    })?;
    let Some(before) = statedir::trust::trusted_bytes(&path)? else {
        outln!(
            "{} was never trusted here (or its record keeps no copy): read all of it",
            path.display()
        );
        return Ok(());
    };
    if before == now {
        outln!("{} is unchanged since you trusted it", path.display());
        return Ok(());
    }
    let old = String::from_utf8_lossy(&before);
    let new = String::from_utf8_lossy(&now);
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    outln!(
        "{} since you trusted it (- gone, + new; line numbers now):",
        path.display()
    );
    match line_diff(&old, &new) {
        Some(changes) => {
            for c in changes {
                match c {
                    Change::Gone(l) => outln!("-      {l}"),
                    Change::New(n, l) => outln!("+{n:>5} {l}"),
                }
            }
        }
        None => outln!("(too long to compare line by line: read all of it)"),
    }
    Ok(())
}

#[derive(Debug, PartialEq, Eq)]
enum Change<'a> {
    /// A line of the trusted config that is gone.
    Gone(&'a str),
    /// A line that is new, with its number in the config now.
    New(usize, &'a str),
}

/// The lines gone from `old` and new in `new`, in order (a longest common subsequence);
/// `None` when the two are too long to compare (over four million line pairs).
fn line_diff<'a>(old: &[&'a str], new: &[&'a str]) -> Option<Vec<Change<'a>>> {
    let (n, m) = (old.len(), new.len());
    if n.saturating_mul(m) > 4_000_000 {
        return None;
    }
    // lcs[i][j]: the longest common subsequence of old[i..] and new[j..].
    let w = m + 1;
    let mut lcs = vec![0u32; (n + 1) * w];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            let v = if old.get(i) == new.get(j) {
                lcs.get((i + 1) * w + j + 1).copied().unwrap_or(0) + 1
            } else {
                let down = lcs.get((i + 1) * w + j).copied().unwrap_or(0);
                let right = lcs.get(i * w + j + 1).copied().unwrap_or(0);
                down.max(right)
            };
            if let Some(cell) = lcs.get_mut(i * w + j) {
                *cell = v;
            }
        }
    }
    let at = |i: usize, j: usize| lcs.get(i * w + j).copied().unwrap_or(0);
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < n || j < m {
        match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) if a == b => {
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) => {
                if at(i + 1, j) >= at(i, j + 1) {
                    out.push(Change::Gone(a));
                    i += 1;
                } else {
                    out.push(Change::New(j + 1, b));
                    j += 1;
                }
            }
            (Some(a), None) => {
                out.push(Change::Gone(a));
                i += 1;
            }
            (None, Some(b)) => {
                out.push(Change::New(j + 1, b));
                j += 1;
            }
            (None, None) => break,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_names_what_is_gone_and_what_is_new_where_it_is_now() {
        let old = [
            "[gate]",
            "a = 1",
            "[[grant]]",
            "tool = \"run\"",
            "decision = \"ask\"",
        ];
        let new = [
            "[gate]",
            "a = 1",
            "[[grant]]",
            "tool = \"run\"",
            "decision = \"allow\"",
        ];
        assert_eq!(
            line_diff(&old, &new).unwrap(),
            [
                Change::Gone("decision = \"ask\""),
                Change::New(5, "decision = \"allow\"")
            ]
        );
        assert_eq!(line_diff(&old, &old).unwrap(), []);
        assert_eq!(line_diff(&[], &["x"]).unwrap(), [Change::New(1, "x")]);
        assert_eq!(line_diff(&["x"], &[]).unwrap(), [Change::Gone("x")]);
        let inserted = ["[gate]", "[[mount]]", "a = 1", "[[grant]]"];
        assert_eq!(
            line_diff(&old[..3], &inserted).unwrap(),
            [Change::New(2, "[[mount]]")]
        );
        let long = vec!["x"; 2001];
        assert!(line_diff(&long, &long).is_none());
    }
}
