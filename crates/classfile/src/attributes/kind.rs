//! Attribute names and where the JVMS lists them.

use super::Location;

macro_rules! kinds {
    ($($kind:ident => $name:literal, [$($loc:ident),*];)*) => {
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
    ConstantValue => "ConstantValue", [Field];
    Code => "Code", [Method];
    StackMapTable => "StackMapTable", [Code];
    Exceptions => "Exceptions", [Method];
    InnerClasses => "InnerClasses", [Class];
    EnclosingMethod => "EnclosingMethod", [Class];
    Synthetic => "Synthetic", [Class, Field, Method];
    Signature => "Signature", [Class, Field, Method, RecordComponent];
    SourceFile => "SourceFile", [Class];
    SourceDebugExtension => "SourceDebugExtension", [Class];
    LineNumberTable => "LineNumberTable", [Code];
    LocalVariableTable => "LocalVariableTable", [Code];
    LocalVariableTypeTable => "LocalVariableTypeTable", [Code];
    Deprecated => "Deprecated", [Class, Field, Method];
    RuntimeVisibleAnnotations => "RuntimeVisibleAnnotations", [Class, Field, Method, RecordComponent];
    RuntimeInvisibleAnnotations => "RuntimeInvisibleAnnotations", [Class, Field, Method, RecordComponent];
    RuntimeVisibleParameterAnnotations => "RuntimeVisibleParameterAnnotations", [Method];
    RuntimeInvisibleParameterAnnotations => "RuntimeInvisibleParameterAnnotations", [Method];
    RuntimeVisibleTypeAnnotations => "RuntimeVisibleTypeAnnotations", [Class, Field, Method, Code, RecordComponent];
    RuntimeInvisibleTypeAnnotations => "RuntimeInvisibleTypeAnnotations", [Class, Field, Method, Code, RecordComponent];
    AnnotationDefault => "AnnotationDefault", [Method];
    BootstrapMethods => "BootstrapMethods", [Class];
    MethodParameters => "MethodParameters", [Method];
    Module => "Module", [Class];
    ModulePackages => "ModulePackages", [Class];
    ModuleMainClass => "ModuleMainClass", [Class];
    NestHost => "NestHost", [Class];
    NestMembers => "NestMembers", [Class];
    Record => "Record", [Class];
    PermittedSubclasses => "PermittedSubclasses", [Class];
    ModuleHashes => "ModuleHashes", [Class];
    ModuleResolution => "ModuleResolution", [Class];
    ModuleTarget => "ModuleTarget", [Class];
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
    }
}
