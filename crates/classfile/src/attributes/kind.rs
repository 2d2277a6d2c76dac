//! Attribute names and where the JVMS lists them.

use super::Location;

macro_rules! kinds {
    ($($kind:ident => $name:literal, $since:literal, [$($loc:ident),*];)*) => {
        /// Every attribute the decoder knows, plus [`AttributeKind::Unknown`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[allow(missing_docs)]
        pub enum AttributeKind {
            $($kind,)*
            /// A name the decoder does not know.
            Unknown,
        }

        impl AttributeKind {
            /// Every kind, `Unknown` last; `ALL[k as usize] == k`.
            pub const ALL: &'static [AttributeKind] = &[$(AttributeKind::$kind,)* AttributeKind::Unknown];

            /// The attribute name as written in class files (`"Unknown"` for unknown ones).
            pub fn name(self) -> &'static str {
                match self {
                    $(AttributeKind::$kind => $name,)*
                    AttributeKind::Unknown => "Unknown",
                }
            }

            /// The kind named by the raw (modified UTF-8) bytes `name`.
            pub fn from_name(name: &[u8]) -> AttributeKind {
                match name {
                    $(n if n == $name.as_bytes() => AttributeKind::$kind,)*
                    _ => AttributeKind::Unknown,
                }
            }

            /// The first class-file major version in which JVMS 4.7 (table 4.7-A)
            /// predefines this attribute; in older class files the name means nothing
            /// to the JVM, which ignores the attribute.
            pub fn since(self) -> u16 {
                match self {
                    $(AttributeKind::$kind => $since,)*
                    AttributeKind::Unknown => 45,
                }
            }

            /// True when JVMS 4.7 (or the JDK, for its private attributes) lists this
            /// attribute at `location`. Unknown attributes may appear anywhere.
            pub fn expected_in(self, location: Location) -> bool {
                match self {
                    $(AttributeKind::$kind => [$(Location::$loc),*].contains(&location),)*
                    AttributeKind::Unknown => true,
                }
            }
        }
    };
}

kinds! {
    ConstantValue => "ConstantValue", 45, [Field];
    Code => "Code", 45, [Method];
    StackMapTable => "StackMapTable", 50, [Code];
    Exceptions => "Exceptions", 45, [Method];
    InnerClasses => "InnerClasses", 45, [Class];
    EnclosingMethod => "EnclosingMethod", 49, [Class];
    Synthetic => "Synthetic", 45, [Class, Field, Method];
    Signature => "Signature", 49, [Class, Field, Method, RecordComponent];
    SourceFile => "SourceFile", 45, [Class];
    SourceDebugExtension => "SourceDebugExtension", 49, [Class];
    LineNumberTable => "LineNumberTable", 45, [Code];
    LocalVariableTable => "LocalVariableTable", 45, [Code];
    LocalVariableTypeTable => "LocalVariableTypeTable", 49, [Code];
    Deprecated => "Deprecated", 45, [Class, Field, Method];
    RuntimeVisibleAnnotations => "RuntimeVisibleAnnotations", 49, [Class, Field, Method, RecordComponent];
    RuntimeInvisibleAnnotations => "RuntimeInvisibleAnnotations", 49, [Class, Field, Method, RecordComponent];
    RuntimeVisibleParameterAnnotations => "RuntimeVisibleParameterAnnotations", 49, [Method];
    RuntimeInvisibleParameterAnnotations => "RuntimeInvisibleParameterAnnotations", 49, [Method];
    RuntimeVisibleTypeAnnotations => "RuntimeVisibleTypeAnnotations", 52, [Class, Field, Method, Code, RecordComponent];
    RuntimeInvisibleTypeAnnotations => "RuntimeInvisibleTypeAnnotations", 52, [Class, Field, Method, Code, RecordComponent];
    AnnotationDefault => "AnnotationDefault", 49, [Method];
    BootstrapMethods => "BootstrapMethods", 51, [Class];
    MethodParameters => "MethodParameters", 52, [Method];
    Module => "Module", 53, [Class];
    ModulePackages => "ModulePackages", 53, [Class];
    ModuleMainClass => "ModuleMainClass", 53, [Class];
    NestHost => "NestHost", 55, [Class];
    NestMembers => "NestMembers", 55, [Class];
    Record => "Record", 60, [Class];
    PermittedSubclasses => "PermittedSubclasses", 61, [Class];
    ModuleHashes => "ModuleHashes", 53, [Class];
    ModuleResolution => "ModuleResolution", 53, [Class];
    ModuleTarget => "ModuleTarget", 53, [Class];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_index_all() {
        for (i, &k) in AttributeKind::ALL.iter().enumerate() {
            assert_eq!(k as usize, i);
            if k != AttributeKind::Unknown {
                assert_eq!(AttributeKind::from_name(k.name().as_bytes()), k);
            }
        }
        assert_eq!(AttributeKind::ALL.len(), 34);
        assert_eq!(AttributeKind::from_name(b"Unknown"), AttributeKind::Unknown);
        assert_eq!(AttributeKind::from_name(b"code"), AttributeKind::Unknown);
    }

    #[test]
    fn places() {
        assert!(AttributeKind::Code.expected_in(Location::Method));
        assert!(!AttributeKind::Code.expected_in(Location::Class));
        assert!(AttributeKind::Signature.expected_in(Location::RecordComponent));
        assert!(AttributeKind::Unknown.expected_in(Location::Code));
        assert_eq!(AttributeKind::StackMapTable.since(), 50);
        assert_eq!(AttributeKind::PermittedSubclasses.since(), 61);
    }
}
