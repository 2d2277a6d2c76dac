//! `Module` (JVMS 4.7.25) and the JDK-private `ModuleHashes`.

use super::reader::{Reader, Want};
use crate::error::Result;

/// A module declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleAttribute {
    /// Module index of the module's name.
    pub name: u16,
    /// `module_flags` (OPEN, SYNTHETIC, MANDATED).
    pub flags: u16,
    /// Utf8 index of the version, or 0.
    pub version: u16,
    /// `requires` directives.
    pub requires: Vec<Requires>,
    /// `exports` directives.
    pub exports: Vec<Export>,
    /// `opens` directives (same shape as exports).
    pub opens: Vec<Export>,
    /// Class indices of the services used.
    pub uses: Vec<u16>,
    /// `provides` directives.
    pub provides: Vec<Provides>,
}

/// A `requires` directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requires {
    /// Module index.
    pub module: u16,
    /// `requires_flags` (TRANSITIVE, STATIC_PHASE, ...).
    pub flags: u16,
    /// Utf8 index of the compiled-against version, or 0.
    pub version: u16,
}

/// An `exports` or `opens` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// Package index.
    pub package: u16,
    /// Flags (SYNTHETIC, MANDATED).
    pub flags: u16,
    /// Module indices of the friend modules; empty means everyone.
    pub to: Vec<u16>,
}

/// A `provides` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provides {
    /// Class index of the service interface.
    pub service: u16,
    /// Class indices of the implementations.
    pub with: Vec<u16>,
}

/// JDK-private `ModuleHashes`: the hash of each module recorded at link time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleHashes<'a> {
    /// Utf8 index of the algorithm name (`SHA-256`).
    pub algorithm: u16,
    /// One entry per hashed module.
    pub hashes: Vec<ModuleHash<'a>>,
}

/// One `ModuleHashes` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModuleHash<'a> {
    /// Module index.
    pub module: u16,
    /// The hash bytes.
    pub hash: &'a [u8],
}

pub(super) fn module(r: &mut Reader<'_, '_>) -> Result<ModuleAttribute> {
    let name = r.index(Want::MODULE, "module_name_index")?;
    let flags = r.u16("module_flags")?;
    let version = r.opt_index(Want::UTF8, "module_version_index")?;
    let count = r.u16("requires_count")? as usize;
    let requires = r.list(count, 6, |r| {
        Ok(Requires {
            module: r.index(Want::MODULE, "requires_index")?,
            flags: r.u16("requires_flags")?,
            version: r.opt_index(Want::UTF8, "requires_version_index")?,
        })
    })?;
    let exports = read_exports(r, EXPORTS)?;
    let opens = read_exports(r, OPENS)?;
    let count = r.u16("uses_count")? as usize;
    let uses = r.list(count, 2, |r| r.index(Want::CLASS, "uses_index"))?;
    let count = r.u16("provides_count")? as usize;
    let provides = r.list(count, 4, |r| {
        let service = r.index(Want::CLASS, "provides_index")?;
        let n = r.u16("provides_with_count")? as usize;
        Ok(Provides {
            service,
            with: r.list(n, 2, |r| r.index(Want::CLASS, "provides_with_index"))?,
        })
    })?;
    Ok(ModuleAttribute {
        name,
        flags,
        version,
        requires,
        exports,
        opens,
        uses,
        provides,
    })
}

/// Field names of `exports` or `opens` entries, for errors.
struct Names {
    count: &'static str,
    index: &'static str,
    flags: &'static str,
    to_count: &'static str,
    to_index: &'static str,
}

const EXPORTS: Names = Names {
    count: "exports_count",
    index: "exports_index",
    flags: "exports_flags",
    to_count: "exports_to_count",
    to_index: "exports_to_index",
};

const OPENS: Names = Names {
    count: "opens_count",
    index: "opens_index",
    flags: "opens_flags",
    to_count: "opens_to_count",
    to_index: "opens_to_index",
};

/// `exports` and `opens` share one layout.
fn read_exports(r: &mut Reader<'_, '_>, names: Names) -> Result<Vec<Export>> {
    let count = r.u16(names.count)? as usize;
    r.list(count, 6, |r| {
        let package = r.index(Want::PACKAGE, names.index)?;
        let flags = r.u16(names.flags)?;
        let n = r.u16(names.to_count)? as usize;
        let to = r.list(n, 2, |r| r.index(Want::MODULE, names.to_index))?;
        Ok(Export { package, flags, to })
    })
}

pub(super) fn module_hashes<'a>(r: &mut Reader<'a, '_>) -> Result<ModuleHashes<'a>> {
    let algorithm = r.index(Want::UTF8, "algorithm_index")?;
    let count = r.u16("hashes_count")? as usize;
    let hashes = r.list(count, 4, |r| {
        let module = r.index(Want::MODULE, "module_name_index")?;
        let n = r.u16("hash_length")? as usize;
        Ok(ModuleHash {
            module,
            hash: r.bytes(n, "hash")?,
        })
    })?;
    Ok(ModuleHashes { algorithm, hashes })
}
