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
    #[arg(long)]
    revoke: bool,
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
    outln!(
        "boxmaker uses it until a byte of it changes; `boxmaker check --config {}` shows what \
         it allows",
        path.display()
    );
    Ok(())
}
