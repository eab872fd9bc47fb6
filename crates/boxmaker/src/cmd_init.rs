//! `boxmaker init [DIR]`: write the commented default `boxmaker.toml`, never over a file
//! that is already there, and trust it (docs/spec.md §6, "Whose config": boxmaker wrote it
//! for the person).

use std::path::PathBuf;

use crate::error::CliError;

/// Write a commented boxmaker.toml that works on a fresh machine.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Directory to write boxmaker.toml in (made if missing).
    #[arg(value_name = "DIR", default_value = ".")]
    dir: PathBuf,
}

pub fn run(args: &InitArgs) -> Result<(), CliError> {
    let dir = match statedir::file::Dir::make(&args.dir, 0o777) {
        Ok(d) => d,
        Err(statedir::file::Error::Io { source, .. }) => {
            return Err(CliError::InitCreateDir {
                path: args.dir.clone(),
                source,
            });
        }
        Err(e) => return Err(e.into()),
    };
    let path = args.dir.join(config::FILE_NAME);
    // The one way (`statedir::file`): written whole beside it, then linked into place,
    // which fails when anything has the name — a link too, which is never followed — so a
    // file that appears in between is never overwritten either.
    match dir.create_new(config::FILE_NAME, config::DEFAULT_CONFIG.as_bytes(), 0o644) {
        Ok(()) => {}
        Err(statedir::file::Error::Exists { .. }) => return Err(CliError::InitExists { path }),
        Err(statedir::file::Error::Io { source, .. }) => {
            return Err(CliError::InitWrite { path, source });
        }
        Err(e) => return Err(e.into()),
    }
    config::trust(&path, config::DEFAULT_CONFIG)?;
    outln!("wrote {} (trusted: it is yours)", path.display());
    Ok(())
}
