//! Reading and writing the containers `ferrofluid instrument` works on: a single
//! `.class`, a directory tree, a `.jar` (zip) or a `.jmod` (`JM\x01\x00` + zip, with
//! classes under `classes/`), written back as a directory, a `.jar` or a `.class`.
//!
//! Entries are visited in a deterministic order (zip order, or sorted file names for
//! directories) so that method ids assigned while visiting are reproducible.

use std::fs;
use std::io::{self, BufWriter, Cursor, Read, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

/// The 4-byte header in front of the zip inside a `.jmod` file.
pub const JMOD_MAGIC: [u8; 4] = *b"JM\x01\x00";

/// An I/O or format problem with the input or output, naming the file.
#[derive(Debug, Error)]
pub enum ArchiveError {
    /// The input could not be read.
    #[error("cannot read '{path}': {source}")]
    Read { path: PathBuf, source: io::Error },
    /// The input is not a zip although its name says .jar/.jmod.
    #[error("cannot read '{path}' as a {what}: {source} (is it a valid {what}?)")]
    Zip {
        path: PathBuf,
        what: &'static str,
        source: zip::result::ZipError,
    },
    /// A `.jmod` without the `JM\x01\x00` header.
    #[error("'{0}' is not a jmod: it does not start with JM\\x01\\x00")]
    NotJmod(PathBuf),
    /// The input path's kind is not supported.
    #[error("'{0}' is not a .class file, a directory, a .jar or a .jmod")]
    UnknownInput(PathBuf),
    /// The output could not be written.
    #[error("cannot write '{path}': {source} (check that its directory exists and is writable)")]
    Write { path: PathBuf, source: io::Error },
    /// Writing the output jar failed.
    #[error("cannot write jar '{path}': {source}")]
    ZipWrite {
        path: PathBuf,
        source: zip::result::ZipError,
    },
    /// An entry name that would escape the output directory.
    #[error("entry '{name}' of '{input}' has an unsafe path (absolute or with '..'); refusing to write it")]
    UnsafeName { input: PathBuf, name: String },
    /// Output is the same path as input.
    #[error("output '{0}' is the input; choose another output path")]
    SameAsInput(PathBuf),
}

/// What kind of container a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// A single class file.
    Class,
    /// A directory tree.
    Dir,
    /// A zip archive (`.jar`, `.zip`).
    Jar,
    /// A JDK module file.
    Jmod,
}

impl InputKind {
    /// Decides by what `path` is: a directory, else by extension.
    pub fn of(path: &Path) -> Result<InputKind, ArchiveError> {
        if path.is_dir() {
            return Ok(InputKind::Dir);
        }
        if !path.exists() {
            return Err(ArchiveError::Read {
                path: path.to_owned(),
                source: io::Error::new(io::ErrorKind::NotFound, "no such file or directory"),
            });
        }
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("class") => Ok(InputKind::Class),
            Some("jar" | "zip" | "war") => Ok(InputKind::Jar),
            Some("jmod") => Ok(InputKind::Jmod),
            _ => Err(ArchiveError::UnknownInput(path.to_owned())),
        }
    }
}

/// One item of an input container.
#[derive(Debug)]
pub enum Entry {
    /// A directory (kept so an output jar lists the same directories).
    Dir(String),
    /// A file with its `/`-separated path inside the container and its contents.
    File(String, Vec<u8>),
}

/// What reading an input skipped on purpose.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReadStats {
    /// Entries of a jmod outside `classes/` (native libraries, config, legal files).
    pub jmod_other: usize,
}

/// Calls `visit` for every entry of the container at `path`, in a stable order.
///
/// Jmod entries are given without their `classes/` prefix; entries outside
/// `classes/` are not visited but counted in [`ReadStats::jmod_other`].
pub fn for_each_entry<E: From<ArchiveError>>(
    path: &Path,
    mut visit: impl FnMut(Entry) -> Result<(), E>,
) -> Result<ReadStats, E> {
    let read_err = |source| ArchiveError::Read {
        path: path.to_owned(),
        source,
    };
    match InputKind::of(path)? {
        InputKind::Class => {
            let data = fs::read(path).map_err(read_err)?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            visit(Entry::File(name, data))?;
            Ok(ReadStats::default())
        }
        InputKind::Dir => {
            for item in walkdir::WalkDir::new(path).min_depth(1).sort_by_file_name() {
                let item = item.map_err(|e| read_err(e.into()))?;
                let rel = item.path().strip_prefix(path).unwrap_or(item.path());
                let name = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                if item.file_type().is_dir() {
                    visit(Entry::Dir(format!("{name}/")))?;
                } else if item.file_type().is_file() {
                    let data = fs::read(item.path()).map_err(|source| ArchiveError::Read {
                        path: item.path().to_owned(),
                        source,
                    })?;
                    visit(Entry::File(name, data))?;
                }
            }
            Ok(ReadStats::default())
        }
        InputKind::Jar => {
            let data = fs::read(path).map_err(read_err)?;
            visit_zip(path, "jar", &data, None, &mut visit)
        }
        InputKind::Jmod => {
            let data = fs::read(path).map_err(read_err)?;
            let zip = data
                .strip_prefix(&JMOD_MAGIC)
                .ok_or_else(|| ArchiveError::NotJmod(path.to_owned()))?;
            visit_zip(path, "jmod", zip, Some("classes/"), &mut visit)
        }
    }
}

fn visit_zip<E: From<ArchiveError>>(
    path: &Path,
    what: &'static str,
    bytes: &[u8],
    keep_prefix: Option<&str>,
    visit: &mut impl FnMut(Entry) -> Result<(), E>,
) -> Result<ReadStats, E> {
    let zip_err = |source| ArchiveError::Zip {
        path: path.to_owned(),
        what,
        source,
    };
    let mut archive = ZipArchive::new(Cursor::new(bytes)).map_err(zip_err)?;
    let mut stats = ReadStats::default();
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).map_err(zip_err)?;
        let full = file.name().to_owned();
        let name = match keep_prefix {
            None => full.as_str(),
            Some(prefix) => match full.strip_prefix(prefix) {
                Some("") => continue,
                Some(rest) => rest,
                None => {
                    stats.jmod_other += usize::from(!file.is_dir());
                    continue;
                }
            },
        }
        .to_owned();
        if file.is_dir() {
            visit(Entry::Dir(name))?;
        } else {
            // The size is a hint only: a hostile header must not make us allocate gigabytes.
            let mut data = Vec::with_capacity(file.size().min(1 << 24) as usize);
            file.read_to_end(&mut data).map_err(|e| zip_err(e.into()))?;
            visit(Entry::File(name, data))?;
        }
    }
    Ok(stats)
}

/// Whether `name` is a jar signature file (`META-INF/*.SF`, `.RSA`, `.DSA`, `.EC`),
/// which patched classes would invalidate.
pub fn is_signature_file(name: &str) -> bool {
    let Some(file) = name.strip_prefix("META-INF/") else {
        return false;
    };
    if file.contains('/') {
        return false;
    }
    let upper = file.to_ascii_uppercase();
    [".SF", ".RSA", ".DSA", ".EC"]
        .iter()
        .any(|ext| upper.ends_with(ext))
}

/// Where the output goes.
pub enum Output {
    /// Files under a directory.
    Dir(PathBuf),
    /// A single class file (input was a single class).
    Class(PathBuf),
    /// A jar being written.
    Jar {
        path: PathBuf,
        zip: Box<ZipWriter<BufWriter<fs::File>>>,
    },
}

impl Output {
    /// Creates the output at `path`: a jar if it ends in `.jar`/`.zip`, a class file if it
    /// ends in `.class` (only for a single-class input), else a directory.
    pub fn create(path: &Path, input: &Path) -> Result<Output, ArchiveError> {
        if same_file(path, input) {
            return Err(ArchiveError::SameAsInput(path.to_owned()));
        }
        let write_err = |source| ArchiveError::Write {
            path: path.to_owned(),
            source,
        };
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("jar" | "zip") if !path.is_dir() => {
                let file = fs::File::create(path).map_err(write_err)?;
                Ok(Output::Jar {
                    path: path.to_owned(),
                    zip: Box::new(ZipWriter::new(BufWriter::new(file))),
                })
            }
            Some("class") if !path.is_dir() => Ok(Output::Class(path.to_owned())),
            _ => {
                fs::create_dir_all(path).map_err(write_err)?;
                Ok(Output::Dir(path.to_owned()))
            }
        }
    }

    /// Adds a directory entry.
    pub fn add_dir(&mut self, name: &str, input: &Path) -> Result<(), ArchiveError> {
        check_name(name, input)?;
        match self {
            Output::Dir(root) => {
                let dir = root.join(name);
                fs::create_dir_all(&dir).map_err(|source| ArchiveError::Write { path: dir, source })
            }
            Output::Class(_) => Ok(()),
            Output::Jar { path, zip } => zip
                .add_directory(name.trim_end_matches('/'), options())
                .map_err(|source| ArchiveError::ZipWrite {
                    path: path.clone(),
                    source,
                }),
        }
    }

    /// Writes one file entry.
    pub fn write(&mut self, name: &str, data: &[u8], input: &Path) -> Result<(), ArchiveError> {
        check_name(name, input)?;
        match self {
            Output::Dir(root) => {
                let file = root.join(name);
                let write_err = |source| ArchiveError::Write {
                    path: file.clone(),
                    source,
                };
                if let Some(parent) = file.parent() {
                    fs::create_dir_all(parent).map_err(write_err)?;
                }
                fs::write(&file, data).map_err(write_err)
            }
            Output::Class(path) => fs::write(&*path, data).map_err(|source| ArchiveError::Write {
                path: path.clone(),
                source,
            }),
            Output::Jar { path, zip } => {
                let zip_err = |source| ArchiveError::ZipWrite {
                    path: path.clone(),
                    source,
                };
                zip.start_file(name, options()).map_err(zip_err)?;
                zip.write_all(data).map_err(|source| ArchiveError::Write {
                    path: path.clone(),
                    source,
                })
            }
        }
    }

    /// Flushes and closes the output.
    pub fn finish(self) -> Result<(), ArchiveError> {
        if let Output::Jar { path, zip } = self {
            let zip_err = |source| ArchiveError::ZipWrite {
                path: path.clone(),
                source,
            };
            let mut writer = zip.finish().map_err(zip_err)?;
            writer.flush().map_err(|source| ArchiveError::Write {
                path: path.clone(),
                source,
            })?;
        }
        Ok(())
    }
}

/// Entry options for output jars: deflated, with zip's fixed default timestamp so the
/// same input always gives the same bytes.
fn options() -> SimpleFileOptions {
    SimpleFileOptions::default().compression_method(CompressionMethod::Deflated)
}

fn check_name(name: &str, input: &Path) -> Result<(), ArchiveError> {
    let unsafe_name =
        name.starts_with('/') || name.contains('\\') || name.split('/').any(|c| c == "..");
    if unsafe_name {
        return Err(ArchiveError::UnsafeName {
            input: input.to_owned(),
            name: name.to_owned(),
        });
    }
    Ok(())
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entry name and contents (`None` for a directory).
    type Listing = Vec<(String, Option<Vec<u8>>)>;

    fn collect(path: &Path) -> (Listing, ReadStats) {
        let mut out = Vec::new();
        let stats = for_each_entry::<ArchiveError>(path, |e| {
            out.push(match e {
                Entry::Dir(n) => (n, None),
                Entry::File(n, d) => (n, Some(d)),
            });
            Ok(())
        })
        .unwrap();
        (out, stats)
    }

    fn write_zip(path: &Path, prefix: &[u8], entries: &[(&str, &[u8])]) {
        let mut buf = Cursor::new(Vec::new());
        let mut zip = ZipWriter::new(&mut buf);
        for (name, data) in entries {
            if name.ends_with('/') {
                zip.add_directory(name.trim_end_matches('/'), options())
                    .unwrap();
            } else {
                zip.start_file(*name, options()).unwrap();
                zip.write_all(data).unwrap();
            }
        }
        zip.finish().unwrap();
        let mut bytes = prefix.to_vec();
        bytes.extend_from_slice(buf.get_ref());
        fs::write(path, bytes).unwrap();
    }

    #[test]
    fn reads_jmod_classes_without_prefix_and_counts_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let jmod = dir.path().join("m.jmod");
        write_zip(
            &jmod,
            &JMOD_MAGIC,
            &[
                ("classes/", b""),
                ("classes/module-info.class", b"\xCA\xFE"),
                ("classes/a/B.class", b"b"),
                ("lib/libx.so", b"elf"),
                ("legal/LICENSE", b"l"),
            ],
        );
        let (entries, stats) = collect(&jmod);
        assert_eq!(
            entries,
            vec![
                ("module-info.class".to_owned(), Some(b"\xCA\xFE".to_vec())),
                ("a/B.class".to_owned(), Some(b"b".to_vec())),
            ]
        );
        assert_eq!(stats.jmod_other, 2);
    }

    #[test]
    fn jmod_without_header_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let jmod = dir.path().join("bad.jmod");
        write_zip(&jmod, b"", &[("classes/A.class", b"a")]);
        let err = for_each_entry::<ArchiveError>(&jmod, |_| Ok(())).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "'{}' is not a jmod: it does not start with JM\\x01\\x00",
                jmod.display()
            )
        );
    }

    #[test]
    fn directory_entries_are_sorted_with_slash_paths() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("b/c")).unwrap();
        fs::write(dir.path().join("b/c/Z.class"), b"z").unwrap();
        fs::write(dir.path().join("a.txt"), b"a").unwrap();
        let (entries, _) = collect(dir.path());
        let names: Vec<_> = entries.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a.txt", "b/", "b/c/", "b/c/Z.class"]);
    }

    #[test]
    fn jar_round_trip_keeps_order_and_contents() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.jar");
        write_zip(
            &input,
            b"",
            &[
                ("META-INF/", b""),
                ("META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\n"),
                ("p/A.class", b"A"),
            ],
        );
        let out_path = dir.path().join("out.jar");
        let mut out = Output::create(&out_path, &input).unwrap();
        for_each_entry::<ArchiveError>(&input, |e| match e {
            Entry::Dir(n) => out.add_dir(&n, &input),
            Entry::File(n, d) => out.write(&n, &d, &input),
        })
        .unwrap();
        out.finish().unwrap();
        assert_eq!(collect(&out_path).0, collect(&input).0);
    }

    #[test]
    fn signature_files_are_recognised() {
        assert!(is_signature_file("META-INF/SIGNER.SF"));
        assert!(is_signature_file("META-INF/signer.rsa"));
        assert!(is_signature_file("META-INF/X.DSA"));
        assert!(!is_signature_file("META-INF/MANIFEST.MF"));
        assert!(!is_signature_file("META-INF/versions/9/X.SF"));
        assert!(!is_signature_file("X.SF"));
    }

    #[test]
    fn unsafe_names_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = Output::create(&dir.path().join("o"), Path::new("in.jar")).unwrap();
        let err = out
            .write("../evil.class", b"x", Path::new("in.jar"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "entry '../evil.class' of 'in.jar' has an unsafe path (absolute or with '..'); refusing to write it"
        );
    }

    #[test]
    fn output_cannot_be_the_input() {
        let dir = tempfile::tempdir().unwrap();
        let jar = dir.path().join("x.jar");
        write_zip(&jar, b"", &[("A.class", b"a")]);
        assert!(matches!(
            Output::create(&jar, &jar),
            Err(ArchiveError::SameAsInput(_))
        ));
    }
}
