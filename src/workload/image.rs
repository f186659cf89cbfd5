//! The workload image, built by nodedown itself without Docker build or a registry: a
//! docker-archive tarball holding this very executable and the shared libraries it needs, then
//! imported into every node's containerd (`ctr images import`, what `kind load image-archive`
//! does). For an existing cluster, push an image of the same contents and set `workload.image`.

use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`ldd {exe}` failed: {detail}")]
    Ldd { exe: PathBuf, detail: String },
    #[error("writing the image archive: {0}")]
    Write(#[from] std::io::Error),
}

/// Files of the image: (path inside the image, path on this machine).
pub fn image_files(exe: &Path) -> Result<Vec<(String, PathBuf)>, ImageError> {
    let out = std::process::Command::new("ldd")
        .arg(exe)
        .output()
        .map_err(|e| ImageError::Ldd {
            exe: exe.into(),
            detail: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(ImageError::Ldd {
            exe: exe.into(),
            detail: String::from_utf8_lossy(&out.stderr).into(),
        });
    }
    let mut files = vec![("usr/local/bin/nodedown".to_string(), exe.to_path_buf())];
    for lib in parse_ldd(&String::from_utf8_lossy(&out.stdout)) {
        files.push((lib.trim_start_matches('/').to_string(), PathBuf::from(&lib)));
    }
    Ok(files)
}

/// Library paths from `ldd` output (`libc.so.6 => /lib/…/libc.so.6 (0x…)`, `/lib64/ld-…`).
pub fn parse_ldd(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, rest)) => rest.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| path.to_string())
        })
        .collect()
}

/// Writes the archive; returns the image reference (`nodedown.local/nodedown:<digest12>`).
pub fn write_archive(files: &[(String, PathBuf)], out: &Path) -> Result<String, ImageError> {
    // The one layer, deterministic (mtime 0, sorted), streamed to a temporary file and hashed
    // on the way (the executable can be tens of MB: never held in memory).
    let layer_path = out.with_extension("layer.tmp");
    let layer_file = std::fs::File::create(&layer_path)?;
    let mut layer = tar::Builder::new(HashingWriter {
        inner: std::io::BufWriter::new(layer_file),
        hasher: Sha256::new(),
    });
    let mut dirs = std::collections::BTreeSet::new();
    let mut sorted = files.to_vec();
    sorted.sort();
    for (inner, _) in &sorted {
        let mut p = Path::new(inner).parent();
        while let Some(d) = p.filter(|d| !d.as_os_str().is_empty()) {
            dirs.insert(d.to_path_buf());
            p = d.parent();
        }
    }
    for d in dirs
        .iter()
        .chain(std::iter::once(&PathBuf::from("data")))
        .chain(std::iter::once(&PathBuf::from("tmp")))
    {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(if d.as_os_str() == "tmp" {
            0o1777
        } else {
            0o755
        });
        h.set_mtime(0);
        h.set_size(0);
        layer.append_data(&mut h, d, std::io::empty())?;
    }
    for (inner, host) in &sorted {
        let read_err = |source| ImageError::Read {
            path: host.clone(),
            source,
        };
        let data = std::fs::File::open(host).map_err(read_err)?;
        let len = data.metadata().map_err(read_err)?.len();
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o755);
        h.set_mtime(0);
        h.set_size(len);
        layer.append_data(&mut h, inner, data)?;
    }
    let mut hashed = layer.into_inner()?;
    hashed.inner.flush()?;
    let layer_digest = hex(&hashed.hasher.finalize());
    let config = serde_json::json!({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin"], "Entrypoint": ["/usr/local/bin/nodedown"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [format!("sha256:{layer_digest}")]},
    })
    .to_string();
    let config_digest = hex(&Sha256::digest(config.as_bytes()));
    let reference = format!("nodedown.local/nodedown:{}", &layer_digest[..12]);
    let manifest = serde_json::json!([{
        "Config": format!("{config_digest}.json"),
        "RepoTags": [reference],
        "Layers": [format!("{layer_digest}/layer.tar")],
    }])
    .to_string();
    let file = std::fs::File::create(out)?;
    let mut archive = tar::Builder::new(std::io::BufWriter::new(file));
    let layer_data = std::fs::File::open(&layer_path)?;
    let mut h = tar::Header::new_gnu();
    h.set_mode(0o644);
    h.set_mtime(0);
    h.set_size(layer_data.metadata()?.len());
    archive.append_data(&mut h, format!("{layer_digest}/layer.tar"), layer_data)?;
    let _ = std::fs::remove_file(&layer_path);
    for (name, data) in [
        (format!("{config_digest}.json"), config.as_bytes()),
        ("manifest.json".to_string(), manifest.as_bytes()),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_size(data.len() as u64);
        archive.append_data(&mut h, name, data)?;
    }
    archive.into_inner()?.flush()?;
    Ok(reference)
}

/// Writes through to `inner` and hashes what was written.
struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_lines_are_parsed() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x7f)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x7f)\n\t/lib64/ld-linux-x86-64.so.2 (0x7f)\n";
        assert_eq!(
            parse_ldd(text),
            vec![
                "/lib/x86_64-linux-gnu/libgcc_s.so.1",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
        );
    }

    #[test]
    fn archive_is_deterministic_and_has_a_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::write(&bin, b"#!/bin/true\n").unwrap();
        let files = vec![("usr/local/bin/nodedown".to_string(), bin)];
        let a = write_archive(&files, &dir.path().join("a.tar")).unwrap();
        let b = write_archive(&files, &dir.path().join("b.tar")).unwrap();
        assert_eq!(a, b);
        let mut ar = tar::Archive::new(std::fs::File::open(dir.path().join("a.tar")).unwrap());
        let names: Vec<String> = ar
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert!(names.contains(&"manifest.json".to_string()), "{names:?}");
    }
}
