//! Typed access to the detectors' capture groups: a [`Group`] names one `(?P<…>)` of a pattern,
//! and a match's groups become [`Parts`], typed per detector, before the engine (`text.rs`)
//! sees them. The engine never reads a group by its name as a string.

use super::Detector;

/// A byte range of the text.
pub(crate) type Span = (usize, usize);

/// A named capture group of a detector's pattern (`(?P<key_value_sep>…)`). Groups are only ever
/// read through this enum, resolved to capture slots once when the table is compiled: a
/// misspelt variant does not compile, and a name the pattern lacks fails that compilation (so
/// every test), instead of silently reading as "no value" — which would mean "not redacted".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Group {
    UserinfoValue,
    CdpCapabilityKind,
    CdpCapabilityId,
    QueryParamName,
    QueryParamValue,
    KeyValueName,
    KeyValueSep,
    KeyValueValue,
    NameValueJsonName,
    NameValueJsonValue,
    NameValueJsonRevValue,
    NameValueJsonRevName,
    NameValueHtmlName,
    NameValueHtmlValue,
    NameValueHtmlRevValue,
    NameValueHtmlRevName,
    SchemeCredentialScheme,
    SchemeCredentialValue,
}

impl Group {
    pub(crate) const ALL: [Group; 18] = [
        Group::UserinfoValue,
        Group::CdpCapabilityKind,
        Group::CdpCapabilityId,
        Group::QueryParamName,
        Group::QueryParamValue,
        Group::KeyValueName,
        Group::KeyValueSep,
        Group::KeyValueValue,
        Group::NameValueJsonName,
        Group::NameValueJsonValue,
        Group::NameValueJsonRevValue,
        Group::NameValueJsonRevName,
        Group::NameValueHtmlName,
        Group::NameValueHtmlValue,
        Group::NameValueHtmlRevValue,
        Group::NameValueHtmlRevName,
        Group::SchemeCredentialScheme,
        Group::SchemeCredentialValue,
    ];

    /// The group's name in its detector's pattern.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Group::UserinfoValue => "userinfo_value",
            Group::CdpCapabilityKind => "cdp_capability_kind",
            Group::CdpCapabilityId => "cdp_capability_id",
            Group::QueryParamName => "query_param_name",
            Group::QueryParamValue => "query_param_value",
            Group::KeyValueName => "key_value_name",
            Group::KeyValueSep => "key_value_sep",
            Group::KeyValueValue => "key_value_value",
            Group::NameValueJsonName => "name_value_json_name",
            Group::NameValueJsonValue => "name_value_json_value",
            Group::NameValueJsonRevValue => "name_value_json_rev_value",
            Group::NameValueJsonRevName => "name_value_json_rev_name",
            Group::NameValueHtmlName => "name_value_html_name",
            Group::NameValueHtmlValue => "name_value_html_value",
            Group::NameValueHtmlRevValue => "name_value_html_rev_value",
            Group::NameValueHtmlRevName => "name_value_html_rev_name",
            Group::SchemeCredentialScheme => "scheme_credential_scheme",
            Group::SchemeCredentialValue => "scheme_credential_value",
        }
    }

    /// The detector whose pattern holds the group.
    pub(crate) fn detector(self) -> Detector {
        match self {
            Group::UserinfoValue => Detector::Userinfo,
            Group::CdpCapabilityKind | Group::CdpCapabilityId => Detector::CdpCapability,
            Group::QueryParamName | Group::QueryParamValue => Detector::QueryParam,
            Group::KeyValueName | Group::KeyValueSep | Group::KeyValueValue => Detector::KeyValue,
            Group::NameValueJsonName
            | Group::NameValueJsonValue
            | Group::NameValueJsonRevValue
            | Group::NameValueJsonRevName
            | Group::NameValueHtmlName
            | Group::NameValueHtmlValue
            | Group::NameValueHtmlRevValue
            | Group::NameValueHtmlRevName => Detector::NameValue,
            Group::SchemeCredentialScheme | Group::SchemeCredentialValue => {
                Detector::SchemeCredential
            }
        }
    }
}

/// Where a sibling-named value was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sibling {
    /// `{"name": "…", "value": "…"}`: the name span is inside its quotes, the value span
    /// includes them (backslash escapes apply).
    Json,
    /// HTML attributes: both spans include their quotes, in any of the HTML spellings.
    Html,
}

/// The parts of a match the engine acts on, typed per detector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Parts {
    /// The whole match is the secret (PEM key, JWT, known token format, CDP id).
    Whole,
    Userinfo {
        value: Span,
    },
    CdpCapability {
        id: Span,
    },
    QueryParam {
        name: Span,
        value: Span,
    },
    KeyValue {
        name: Span,
        sep: Span,
        value: Span,
    },
    /// The value's name is in a sibling field, before or after it.
    NameValue {
        name: Span,
        value: Span,
        form: Sibling,
    },
    SchemeCredential {
        value: Span,
    },
    /// Only a triggered detector's trigger matched here, not its full pattern: nothing to do.
    NoMatch,
    /// A group the detector needs did not take part in the match. The patterns make this
    /// impossible (a test matches every form); should it happen anyway, the engine redacts the
    /// whole match rather than skip it.
    Unresolved,
}

/// The typed parts of a match of `detector`, from its groups.
pub(super) fn parts_of(detector: Detector, get: impl Fn(Group) -> Option<Span>) -> Parts {
    let sibling = |name: Group, value: Group, form: Sibling| {
        get(name)
            .zip(get(value))
            .map(|(name, value)| Parts::NameValue { name, value, form })
    };
    let parts = match detector {
        Detector::PrivateKey | Detector::Jwt | Detector::KnownToken | Detector::CdpId => {
            Some(Parts::Whole)
        }
        Detector::Userinfo => get(Group::UserinfoValue).map(|value| Parts::Userinfo { value }),
        Detector::CdpCapability => {
            get(Group::CdpCapabilityId).map(|id| Parts::CdpCapability { id })
        }
        Detector::QueryParam => get(Group::QueryParamName)
            .zip(get(Group::QueryParamValue))
            .map(|(name, value)| Parts::QueryParam { name, value }),
        Detector::KeyValue => match (
            get(Group::KeyValueName),
            get(Group::KeyValueSep),
            get(Group::KeyValueValue),
        ) {
            (Some(name), Some(sep), Some(value)) => Some(Parts::KeyValue { name, sep, value }),
            _ => None,
        },
        Detector::NameValue => sibling(
            Group::NameValueJsonName,
            Group::NameValueJsonValue,
            Sibling::Json,
        )
        .or_else(|| {
            sibling(
                Group::NameValueJsonRevName,
                Group::NameValueJsonRevValue,
                Sibling::Json,
            )
        })
        .or_else(|| {
            sibling(
                Group::NameValueHtmlName,
                Group::NameValueHtmlValue,
                Sibling::Html,
            )
        })
        .or_else(|| {
            sibling(
                Group::NameValueHtmlRevName,
                Group::NameValueHtmlRevValue,
                Sibling::Html,
            )
        }),
        Detector::SchemeCredential => {
            get(Group::SchemeCredentialValue).map(|value| Parts::SchemeCredential { value })
        }
    };
    parts.unwrap_or(Parts::Unresolved)
}
