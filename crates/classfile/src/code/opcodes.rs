//! The JVM instruction set (JVMS 6.5): mnemonics, lengths and control-flow classes.

#![allow(missing_docs)]

pub const NOP: u8 = 0x00;
pub const ACONST_NULL: u8 = 0x01;
pub const ICONST_M1: u8 = 0x02;
pub const ICONST_0: u8 = 0x03;
pub const ICONST_5: u8 = 0x08;
pub const LCONST_0: u8 = 0x09;
pub const DCONST_1: u8 = 0x0f;
pub const BIPUSH: u8 = 0x10;
pub const SIPUSH: u8 = 0x11;
pub const LDC: u8 = 0x12;
pub const LDC_W: u8 = 0x13;
pub const LDC2_W: u8 = 0x14;
pub const ILOAD: u8 = 0x15;
pub const LLOAD: u8 = 0x16;
pub const FLOAD: u8 = 0x17;
pub const DLOAD: u8 = 0x18;
pub const ALOAD: u8 = 0x19;
pub const ILOAD_0: u8 = 0x1a;
pub const ALOAD_0: u8 = 0x2a;
pub const ALOAD_3: u8 = 0x2d;
pub const IALOAD: u8 = 0x2e;
pub const SALOAD: u8 = 0x35;
pub const ISTORE: u8 = 0x36;
pub const LSTORE: u8 = 0x37;
pub const FSTORE: u8 = 0x38;
pub const DSTORE: u8 = 0x39;
pub const ASTORE: u8 = 0x3a;
pub const ISTORE_0: u8 = 0x3b;
pub const ASTORE_0: u8 = 0x4b;
pub const ASTORE_3: u8 = 0x4e;
pub const IASTORE: u8 = 0x4f;
pub const SASTORE: u8 = 0x56;
pub const POP: u8 = 0x57;
pub const POP2: u8 = 0x58;
pub const DUP: u8 = 0x59;
pub const DUP_X1: u8 = 0x5a;
pub const DUP_X2: u8 = 0x5b;
pub const DUP2: u8 = 0x5c;
pub const DUP2_X1: u8 = 0x5d;
pub const DUP2_X2: u8 = 0x5e;
pub const SWAP: u8 = 0x5f;
pub const IDIV: u8 = 0x6c;
pub const LDIV: u8 = 0x6d;
pub const IREM: u8 = 0x70;
pub const LREM: u8 = 0x71;
pub const IINC: u8 = 0x84;
pub const IFEQ: u8 = 0x99;
pub const IF_ACMPNE: u8 = 0xa6;
pub const GOTO: u8 = 0xa7;
pub const JSR: u8 = 0xa8;
pub const RET: u8 = 0xa9;
pub const TABLESWITCH: u8 = 0xaa;
pub const LOOKUPSWITCH: u8 = 0xab;
pub const IRETURN: u8 = 0xac;
pub const RETURN: u8 = 0xb1;
pub const GETSTATIC: u8 = 0xb2;
pub const PUTSTATIC: u8 = 0xb3;
pub const GETFIELD: u8 = 0xb4;
pub const PUTFIELD: u8 = 0xb5;
pub const INVOKEVIRTUAL: u8 = 0xb6;
pub const INVOKESPECIAL: u8 = 0xb7;
pub const INVOKESTATIC: u8 = 0xb8;
pub const INVOKEINTERFACE: u8 = 0xb9;
pub const INVOKEDYNAMIC: u8 = 0xba;
pub const NEW: u8 = 0xbb;
pub const NEWARRAY: u8 = 0xbc;
pub const ANEWARRAY: u8 = 0xbd;
pub const ARRAYLENGTH: u8 = 0xbe;
pub const ATHROW: u8 = 0xbf;
pub const CHECKCAST: u8 = 0xc0;
pub const INSTANCEOF: u8 = 0xc1;
pub const MONITORENTER: u8 = 0xc2;
pub const MONITOREXIT: u8 = 0xc3;
pub const WIDE: u8 = 0xc4;
pub const MULTIANEWARRAY: u8 = 0xc5;
pub const IFNULL: u8 = 0xc6;
pub const IFNONNULL: u8 = 0xc7;
pub const GOTO_W: u8 = 0xc8;
pub const JSR_W: u8 = 0xc9;

/// Mnemonics of opcodes 0x00..=0xc9.
pub const NAMES: [&str; 202] = [
    "nop",
    "aconst_null",
    "iconst_m1",
    "iconst_0",
    "iconst_1",
    "iconst_2",
    "iconst_3",
    "iconst_4",
    "iconst_5",
    "lconst_0",
    "lconst_1",
    "fconst_0",
    "fconst_1",
    "fconst_2",
    "dconst_0",
    "dconst_1",
    "bipush",
    "sipush",
    "ldc",
    "ldc_w",
    "ldc2_w",
    "iload",
    "lload",
    "fload",
    "dload",
    "aload",
    "iload_0",
    "iload_1",
    "iload_2",
    "iload_3",
    "lload_0",
    "lload_1",
    "lload_2",
    "lload_3",
    "fload_0",
    "fload_1",
    "fload_2",
    "fload_3",
    "dload_0",
    "dload_1",
    "dload_2",
    "dload_3",
    "aload_0",
    "aload_1",
    "aload_2",
    "aload_3",
    "iaload",
    "laload",
    "faload",
    "daload",
    "aaload",
    "baload",
    "caload",
    "saload",
    "istore",
    "lstore",
    "fstore",
    "dstore",
    "astore",
    "istore_0",
    "istore_1",
    "istore_2",
    "istore_3",
    "lstore_0",
    "lstore_1",
    "lstore_2",
    "lstore_3",
    "fstore_0",
    "fstore_1",
    "fstore_2",
    "fstore_3",
    "dstore_0",
    "dstore_1",
    "dstore_2",
    "dstore_3",
    "astore_0",
    "astore_1",
    "astore_2",
    "astore_3",
    "iastore",
    "lastore",
    "fastore",
    "dastore",
    "aastore",
    "bastore",
    "castore",
    "sastore",
    "pop",
    "pop2",
    "dup",
    "dup_x1",
    "dup_x2",
    "dup2",
    "dup2_x1",
    "dup2_x2",
    "swap",
    "iadd",
    "ladd",
    "fadd",
    "dadd",
    "isub",
    "lsub",
    "fsub",
    "dsub",
    "imul",
    "lmul",
    "fmul",
    "dmul",
    "idiv",
    "ldiv",
    "fdiv",
    "ddiv",
    "irem",
    "lrem",
    "frem",
    "drem",
    "ineg",
    "lneg",
    "fneg",
    "dneg",
    "ishl",
    "lshl",
    "ishr",
    "lshr",
    "iushr",
    "lushr",
    "iand",
    "land",
    "ior",
    "lor",
    "ixor",
    "lxor",
    "iinc",
    "i2l",
    "i2f",
    "i2d",
    "l2i",
    "l2f",
    "l2d",
    "f2i",
    "f2l",
    "f2d",
    "d2i",
    "d2l",
    "d2f",
    "i2b",
    "i2c",
    "i2s",
    "lcmp",
    "fcmpl",
    "fcmpg",
    "dcmpl",
    "dcmpg",
    "ifeq",
    "ifne",
    "iflt",
    "ifge",
    "ifgt",
    "ifle",
    "if_icmpeq",
    "if_icmpne",
    "if_icmplt",
    "if_icmpge",
    "if_icmpgt",
    "if_icmple",
    "if_acmpeq",
    "if_acmpne",
    "goto",
    "jsr",
    "ret",
    "tableswitch",
    "lookupswitch",
    "ireturn",
    "lreturn",
    "freturn",
    "dreturn",
    "areturn",
    "return",
    "getstatic",
    "putstatic",
    "getfield",
    "putfield",
    "invokevirtual",
    "invokespecial",
    "invokestatic",
    "invokeinterface",
    "invokedynamic",
    "new",
    "newarray",
    "anewarray",
    "arraylength",
    "athrow",
    "checkcast",
    "instanceof",
    "monitorenter",
    "monitorexit",
    "wide",
    "multianewarray",
    "ifnull",
    "ifnonnull",
    "goto_w",
    "jsr_w",
];

/// Fixed instruction length, 0 for variable-length ones (switches, wide), `None` for invalid opcodes.
pub const fn fixed_len(op: u8) -> Option<u8> {
    Some(match op {
        0x00..=0x0f => 1,
        BIPUSH | LDC => 2,
        SIPUSH | LDC_W | LDC2_W => 3,
        0x15..=0x19 => 2,
        0x1a..=0x35 => 1,
        0x36..=0x3a => 2,
        0x3b..=0x83 => 1,
        IINC => 3,
        0x85..=0x98 => 1,
        0x99..=JSR => 3,
        RET => 2,
        TABLESWITCH | LOOKUPSWITCH => 0,
        0xac..=0xb1 => 1,
        0xb2..=INVOKESPECIAL | INVOKESTATIC => 3,
        INVOKEINTERFACE | INVOKEDYNAMIC => 5,
        NEW => 3,
        NEWARRAY => 2,
        ANEWARRAY => 3,
        ARRAYLENGTH | ATHROW => 1,
        CHECKCAST | INSTANCEOF => 3,
        MONITORENTER | MONITOREXIT => 1,
        WIDE => 0,
        MULTIANEWARRAY => 4,
        IFNULL | IFNONNULL => 3,
        GOTO_W | JSR_W => 5,
        _ => return None,
    })
}

/// [`fixed_len`] for every opcode, `0xFF` for invalid ones: one load instead of a match.
pub const FIXED_LEN: [u8; 256] = {
    let mut t = [0xFFu8; 256];
    let mut op = 0;
    while op < 256 {
        if let Some(l) = fixed_len(op as u8) {
            t[op] = l;
        }
        op += 1;
    }
    t
};

/// The mnemonic of `op`.
pub fn name(op: u8) -> &'static str {
    NAMES.get(op as usize).copied().unwrap_or("<invalid>")
}

/// Conditional branches with a 16-bit offset.
pub fn is_conditional(op: u8) -> bool {
    matches!(op, IFEQ..=IF_ACMPNE | IFNULL | IFNONNULL)
}

/// `ireturn` .. `return`.
pub fn is_return(op: u8) -> bool {
    (IRETURN..=RETURN).contains(&op)
}

/// The opposite condition of a conditional branch (`ifeq` <-> `ifne`, ...).
pub fn invert_condition(op: u8) -> u8 {
    match op {
        IFNULL => IFNONNULL,
        IFNONNULL => IFNULL,
        // ifeq/ifne, iflt/ifge, ifgt/ifle, if_icmpeq/ne, ... come in pairs starting at an odd opcode.
        _ if (op - IFEQ) % 2 == 0 => op + 1,
        _ => op - 1,
    }
}

/// Instructions after which control never falls through to the next one.
pub fn ends_flow(op: u8) -> bool {
    matches!(
        op,
        GOTO | GOTO_W | RET | TABLESWITCH | LOOKUPSWITCH | ATHROW
    ) || is_return(op)
}

/// Instructions that may throw an exception (JP's Precise BBA ends a block after each).
///
/// Arithmetic other than integer division, loads/stores of locals, stack manipulation,
/// constants other than `ldc` (which may load a class), comparisons and branches cannot throw.
pub fn may_throw(op: u8) -> bool {
    matches!(
        op,
        LDC | LDC_W | LDC2_W
            | IALOAD..=SALOAD
            | IASTORE..=SASTORE
            | IDIV | LDIV | IREM | LREM
            | IRETURN..=RETURN
            | GETSTATIC..=INSTANCEOF
            | MONITORENTER | MONITOREXIT
            | MULTIANEWARRAY
    )
}
