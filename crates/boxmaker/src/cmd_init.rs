//! `boxmaker init [DIR]`: write the commented default `boxmaker.toml`, never over a file
//! that is already there.

use std::io::Write;
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
    std::fs::create_dir_all(&args.dir).map_err(|source| CliError::InitCreateDir {
        path: args.dir.clone(),
        source,
    })?;
    let path = args.dir.join(config::FILE_NAME);
    // `create_new` checks and creates in one step, so a file that appears in between is
    // never overwritten either.
    let mut file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(CliError::InitExists { path });
        }
        Err(source) => return Err(CliError::InitWrite { path, source }),
    };
    file.write_all(config::DEFAULT_CONFIG.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|source| CliError::InitWrite {
            path: path.clone(),
            source,
        })?;
    outln!("wrote {}", path.display());
    Ok(())
}
