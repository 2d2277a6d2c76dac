//! Bytecode: instruction decoding, frames, analysis and relocating edits.
