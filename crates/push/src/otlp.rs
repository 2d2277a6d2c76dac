//! OpenTelemetry's profiles signal: the messages of `opentelemetry-proto` v1.11.0
//! (`opentelemetry/proto/profiles/v1development/profiles.proto`, its collector service's
//! `ExportProfilesServiceRequest`, and the common and resource messages they use), derived with
//! prost like the pprof module's, and the conversion of an interval's pprof into them.
//!
//! The conversion is pprof's, one for one: the dictionary holds the strings, functions,
//! locations and stacks (each table's entry 0 the zero value, as the protocol requires), and
//! every sample type becomes one `Profile` (OTLP profiles have one sample type each) whose
//! samples carry one aggregated value, timestamps left out. The profiles are exact, not
//! sampled: the period type is the sample type with period 1 (every event counted), which is
//! also what Pyroscope names an OTLP profile's series after. The labels are resource
//! attributes, the standard ones under their semantic-convention names (`service.name`,
//! `host.name`, `process.pid`), ferrofluid's under `ferrofluid.` (`ferrofluid.mode`,
//! `ferrofluid.dropped_profiles`), the user's as given.

use std::collections::HashMap;

use ferrofluid_report::pprof::proto as pprof;

use crate::interval::{unix_ns, Interval};
use crate::labels::{Labels, DROPPED, HOST, MODE, PID, SERVICE_NAME};

/// `opentelemetry.proto.common.v1`.
pub mod common {
    #![allow(missing_docs)]

    /// `AnyValue`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AnyValue {
        #[prost(oneof = "any_value::Value", tags = "1, 2, 3, 4, 5, 6, 7, 8")]
        pub value: Option<any_value::Value>,
    }

    /// `AnyValue`'s `oneof value`.
    pub mod any_value {
        #![allow(missing_docs)]

        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Value {
            #[prost(string, tag = "1")]
            StringValue(String),
            #[prost(bool, tag = "2")]
            BoolValue(bool),
            #[prost(int64, tag = "3")]
            IntValue(i64),
            #[prost(double, tag = "4")]
            DoubleValue(f64),
            #[prost(message, tag = "5")]
            ArrayValue(super::ArrayValue),
            #[prost(message, tag = "6")]
            KvlistValue(super::KeyValueList),
            #[prost(bytes, tag = "7")]
            BytesValue(Vec<u8>),
            #[prost(int32, tag = "8")]
            StringValueStrindex(i32),
        }
    }

    /// `ArrayValue`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ArrayValue {
        #[prost(message, repeated, tag = "1")]
        pub values: Vec<AnyValue>,
    }

    /// `KeyValueList`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct KeyValueList {
        #[prost(message, repeated, tag = "1")]
        pub values: Vec<KeyValue>,
    }

    /// `KeyValue`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct KeyValue {
        #[prost(string, tag = "1")]
        pub key: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<AnyValue>,
        #[prost(int32, tag = "3")]
        pub key_strindex: i32,
    }

    /// `InstrumentationScope`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InstrumentationScope {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub version: String,
        #[prost(message, repeated, tag = "3")]
        pub attributes: Vec<KeyValue>,
        #[prost(uint32, tag = "4")]
        pub dropped_attributes_count: u32,
    }

    /// `opentelemetry.proto.resource.v1.Resource` (entity references left out).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Resource {
        #[prost(message, repeated, tag = "1")]
        pub attributes: Vec<KeyValue>,
        #[prost(uint32, tag = "2")]
        pub dropped_attributes_count: u32,
    }
}

/// `opentelemetry.proto.profiles.v1development` and the collector's request and response.
pub mod proto {
    #![allow(missing_docs)]

    pub use super::common::AnyValue;
    use super::common::{InstrumentationScope, Resource};

    /// `collector.profiles.v1development.ExportProfilesServiceRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportProfilesServiceRequest {
        #[prost(message, repeated, tag = "1")]
        pub resource_profiles: Vec<ResourceProfiles>,
        #[prost(message, optional, tag = "2")]
        pub dictionary: Option<ProfilesDictionary>,
    }

    /// `collector.profiles.v1development.ExportProfilesServiceResponse`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportProfilesServiceResponse {
        #[prost(message, optional, tag = "1")]
        pub partial_success: Option<ExportProfilesPartialSuccess>,
    }

    /// `collector.profiles.v1development.ExportProfilesPartialSuccess`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportProfilesPartialSuccess {
        #[prost(int64, tag = "1")]
        pub rejected_profiles: i64,
        #[prost(string, tag = "2")]
        pub error_message: String,
    }

    /// `ProfilesDictionary`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ProfilesDictionary {
        #[prost(message, repeated, tag = "1")]
        pub mapping_table: Vec<Mapping>,
        #[prost(message, repeated, tag = "2")]
        pub location_table: Vec<Location>,
        #[prost(message, repeated, tag = "3")]
        pub function_table: Vec<Function>,
        #[prost(message, repeated, tag = "4")]
        pub link_table: Vec<Link>,
        #[prost(string, repeated, tag = "5")]
        pub string_table: Vec<String>,
        #[prost(message, repeated, tag = "6")]
        pub attribute_table: Vec<KeyValueAndUnit>,
        #[prost(message, repeated, tag = "7")]
        pub stack_table: Vec<Stack>,
    }

    /// `ResourceProfiles`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ResourceProfiles {
        #[prost(message, optional, tag = "1")]
        pub resource: Option<Resource>,
        #[prost(message, repeated, tag = "2")]
        pub scope_profiles: Vec<ScopeProfiles>,
        #[prost(string, tag = "3")]
        pub schema_url: String,
    }

    /// `ScopeProfiles`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ScopeProfiles {
        #[prost(message, optional, tag = "1")]
        pub scope: Option<InstrumentationScope>,
        #[prost(message, repeated, tag = "2")]
        pub profiles: Vec<Profile>,
        #[prost(string, tag = "3")]
        pub schema_url: String,
    }

    /// `Profile`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, optional, tag = "1")]
        pub sample_type: Option<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<Sample>,
        #[prost(fixed64, tag = "3")]
        pub time_unix_nano: u64,
        #[prost(uint64, tag = "4")]
        pub duration_nano: u64,
        #[prost(message, optional, tag = "5")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "6")]
        pub period: i64,
        #[prost(bytes = "vec", tag = "7")]
        pub profile_id: Vec<u8>,
        #[prost(uint32, tag = "8")]
        pub dropped_attributes_count: u32,
        #[prost(string, tag = "9")]
        pub original_payload_format: String,
        #[prost(bytes = "vec", tag = "10")]
        pub original_payload: Vec<u8>,
        #[prost(int32, repeated, tag = "11")]
        pub attribute_indices: Vec<i32>,
    }

    /// `Link`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Link {
        #[prost(bytes = "vec", tag = "1")]
        pub trace_id: Vec<u8>,
        #[prost(bytes = "vec", tag = "2")]
        pub span_id: Vec<u8>,
    }

    /// `ValueType`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int32, tag = "1")]
        pub type_strindex: i32,
        #[prost(int32, tag = "2")]
        pub unit_strindex: i32,
    }

    /// `Sample`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(int32, tag = "1")]
        pub stack_index: i32,
        #[prost(int32, repeated, tag = "2")]
        pub attribute_indices: Vec<i32>,
        #[prost(int32, tag = "3")]
        pub link_index: i32,
        #[prost(int64, repeated, tag = "4")]
        pub values: Vec<i64>,
        #[prost(fixed64, repeated, tag = "5")]
        pub timestamps_unix_nano: Vec<u64>,
    }

    /// `Mapping`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Mapping {
        #[prost(uint64, tag = "1")]
        pub memory_start: u64,
        #[prost(uint64, tag = "2")]
        pub memory_limit: u64,
        #[prost(uint64, tag = "3")]
        pub file_offset: u64,
        #[prost(int32, tag = "4")]
        pub filename_strindex: i32,
        #[prost(int32, repeated, tag = "5")]
        pub attribute_indices: Vec<i32>,
    }

    /// `Stack`: location indexes, leaf first.
    #[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
    pub struct Stack {
        #[prost(int32, repeated, tag = "1")]
        pub location_indices: Vec<i32>,
    }

    /// `Location`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(int32, tag = "1")]
        pub mapping_index: i32,
        #[prost(uint64, tag = "2")]
        pub address: u64,
        #[prost(message, repeated, tag = "3")]
        pub lines: Vec<Line>,
        #[prost(int32, repeated, tag = "4")]
        pub attribute_indices: Vec<i32>,
    }

    /// `Line`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(int32, tag = "1")]
        pub function_index: i32,
        #[prost(int64, tag = "2")]
        pub line: i64,
        #[prost(int64, tag = "3")]
        pub column: i64,
    }

    /// `Function`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(int32, tag = "1")]
        pub name_strindex: i32,
        #[prost(int32, tag = "2")]
        pub system_name_strindex: i32,
        #[prost(int32, tag = "3")]
        pub filename_strindex: i32,
        #[prost(int64, tag = "4")]
        pub start_line: i64,
    }

    /// `KeyValueAndUnit`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct KeyValueAndUnit {
        #[prost(int32, tag = "1")]
        pub key_strindex: i32,
        #[prost(message, optional, tag = "2")]
        pub value: Option<AnyValue>,
        #[prost(int32, tag = "3")]
        pub unit_strindex: i32,
    }
}

use common::{any_value::Value, AnyValue, InstrumentationScope, KeyValue, Resource};
use proto::*;

/// Why a pprof message could not be converted: an index out of its table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pprof message: {0}")]
pub struct ConvertError(String);

/// The OTLP export request of `interval`, labelled `labels`.
pub fn request(
    interval: &Interval,
    labels: &Labels,
) -> Result<ExportProfilesServiceRequest, ConvertError> {
    let p = interval.decode().map_err(|e| ConvertError(e.to_string()))?;
    convert(
        &p,
        labels,
        unix_ns(interval.from),
        unix_ns(interval.until).saturating_sub(unix_ns(interval.from)),
    )
}

/// The OTLP export request of pprof message `p`, covering `duration_ns` from `time_ns`.
pub fn convert(
    p: &pprof::Profile,
    labels: &Labels,
    time_ns: u64,
    duration_ns: u64,
) -> Result<ExportProfilesServiceRequest, ConvertError> {
    let index = |i: usize, what: &str| {
        i32::try_from(i).map_err(|_| ConvertError(format!("more than 2^31 {what}")))
    };
    let string = |i: i64| -> Result<i32, ConvertError> {
        usize::try_from(i)
            .ok()
            .filter(|&i| i < p.string_table.len())
            .and_then(|i| i32::try_from(i).ok())
            .ok_or_else(|| ConvertError(format!("string index {i} out of range")))
    };
    let mut dictionary = ProfilesDictionary {
        mapping_table: vec![Mapping::default()],
        location_table: vec![Location::default()],
        function_table: vec![Function::default()],
        // The zero link with full-length ids, as the protocol recommends.
        link_table: vec![Link {
            trace_id: vec![0; 16],
            span_id: vec![0; 8],
        }],
        string_table: p.string_table.clone(),
        attribute_table: vec![KeyValueAndUnit::default()],
        stack_table: vec![Stack::default()],
    };
    if dictionary.string_table.first().map(String::as_str) != Some("") {
        return Err(ConvertError("string 0 is not empty".into()));
    }
    // pprof ids are 1-based table positions; OTLP's tables keep the zero value at 0.
    let mut function_index: HashMap<u64, i32> = HashMap::new();
    for f in &p.function {
        function_index.insert(f.id, index(dictionary.function_table.len(), "functions")?);
        dictionary.function_table.push(Function {
            name_strindex: string(f.name)?,
            system_name_strindex: string(f.system_name)?,
            filename_strindex: string(f.filename)?,
            start_line: f.start_line,
        });
    }
    let mut location_index: HashMap<u64, i32> = HashMap::new();
    for l in &p.location {
        let lines = l
            .line
            .iter()
            .map(|line| {
                Ok(Line {
                    function_index: *function_index.get(&line.function_id).ok_or_else(|| {
                        ConvertError(format!("function id {} unknown", line.function_id))
                    })?,
                    line: line.line,
                    column: line.column,
                })
            })
            .collect::<Result<Vec<_>, ConvertError>>()?;
        location_index.insert(l.id, index(dictionary.location_table.len(), "locations")?);
        dictionary.location_table.push(Location {
            mapping_index: 0,
            address: l.address,
            lines,
            attribute_indices: Vec::new(),
        });
    }
    let mut stacks: HashMap<Stack, i32> = HashMap::from([(Stack::default(), 0)]);
    let mut sample_stacks = Vec::with_capacity(p.sample.len());
    for s in &p.sample {
        let stack = Stack {
            location_indices: s
                .location_id
                .iter()
                .map(|id| {
                    location_index
                        .get(id)
                        .copied()
                        .ok_or_else(|| ConvertError(format!("location id {id} unknown")))
                })
                .collect::<Result<_, _>>()?,
        };
        let i = match stacks.get(&stack) {
            Some(&i) => i,
            None => {
                let i = index(dictionary.stack_table.len(), "stacks")?;
                stacks.insert(stack.clone(), i);
                dictionary.stack_table.push(stack);
                i
            }
        };
        sample_stacks.push(i);
    }
    let profiles = p
        .sample_type
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let value_type = ValueType {
                type_strindex: string(t.r#type)?,
                unit_strindex: string(t.unit)?,
            };
            let samples = p
                .sample
                .iter()
                .zip(&sample_stacks)
                .filter_map(|(s, &stack_index)| {
                    let v = s.value.get(k).copied().unwrap_or(0);
                    (v != 0).then(|| Sample {
                        stack_index,
                        values: vec![v],
                        ..Default::default()
                    })
                })
                .collect();
            Ok(Profile {
                sample_type: Some(value_type.clone()),
                samples,
                time_unix_nano: time_ns,
                duration_nano: duration_ns,
                period_type: Some(value_type),
                period: 1,
                profile_id: profile_id(),
                ..Default::default()
            })
        })
        .collect::<Result<Vec<_>, ConvertError>>()?;
    Ok(ExportProfilesServiceRequest {
        resource_profiles: vec![ResourceProfiles {
            resource: Some(Resource {
                attributes: resource_attributes(labels),
                dropped_attributes_count: 0,
            }),
            scope_profiles: vec![ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: "ferrofluid".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                profiles,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
        dictionary: Some(dictionary),
    })
}

/// The labels as resource attributes (see the module documentation).
pub fn resource_attributes(labels: &Labels) -> Vec<KeyValue> {
    labels
        .iter()
        .map(|(k, v)| {
            let key = match k {
                SERVICE_NAME => "service.name".to_owned(),
                HOST => "host.name".to_owned(),
                PID => "process.pid".to_owned(),
                MODE | DROPPED => format!("ferrofluid.{k}"),
                other => other.to_owned(),
            };
            let value = match (k, v.parse::<i64>()) {
                (PID | DROPPED, Ok(n)) => Value::IntValue(n),
                _ => Value::StringValue(v.to_owned()),
            };
            KeyValue {
                key,
                value: Some(AnyValue { value: Some(value) }),
                key_strindex: 0,
            }
        })
        .collect()
}

/// A random, non-zero 16-byte profile id.
fn profile_id() -> Vec<u8> {
    let id = fastrand::u128(1..);
    id.to_be_bytes().to_vec()
}
