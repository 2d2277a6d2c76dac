//! Serde through `Display`/`FromStr`, so patterns and names travel in their one grammar.

pub(crate) mod as_string {
    use std::fmt::Display;
    use std::str::FromStr;

    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<T: Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        String::deserialize(d)?.parse().map_err(D::Error::custom)
    }
}

pub(crate) mod as_strings {
    use std::fmt::Display;
    use std::str::FromStr;

    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<T: Display, S: Serializer>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(ToString::to_string))
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<Vec<T>, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        Vec::<String>::deserialize(d)?
            .into_iter()
            .map(|s| s.parse().map_err(D::Error::custom))
            .collect()
    }
}
