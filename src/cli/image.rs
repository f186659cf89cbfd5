use super::{error, EXIT_HARNESS, EXIT_OK};
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
  nodedown image export nodedown.tar      then docker load, tag, push; run with --workload-image")]
pub struct ImageArgs {
    #[command(subcommand)]
    pub command: ImageCommand,
}

#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// Write the workload image (this nodedown executable and its libraries) as a docker-archive
    /// tarball, and print its reference. Load or push it where your cluster pulls from (e.g.
    /// `docker load -i FILE && docker push …`, `kind load image-archive FILE`, `ctr -n k8s.io
    /// images import FILE` on each node), then run with `--workload-image REFERENCE` (or
    /// `workload.image` in the experiment).
    Export {
        /// Where to write the archive.
        file: PathBuf,
    },
}

pub fn image(args: ImageArgs) -> u8 {
    match args.command {
        ImageCommand::Export { file } => {
            let result = std::env::current_exe()
                .map_err(|e| e.to_string())
                .and_then(|exe| {
                    crate::workload::image::image_files(&exe).map_err(|e| e.to_string())
                })
                .and_then(|files| {
                    crate::workload::image::write_archive(&files, &file).map_err(|e| e.to_string())
                });
            match result {
                Ok(reference) => {
                    println!("{reference}");
                    EXIT_OK
                }
                Err(e) => {
                    error(format!("cannot write {}: {e}", file.display()));
                    EXIT_HARNESS
                }
            }
        }
    }
}
