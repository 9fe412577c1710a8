//! Unit tests of the rule table: names, markers, shapes, where each detector matches, and
//! that every capture group resolves.

use super::*;

#[test]
fn combined_regex_compiles_and_every_rule_has_a_distinct_name() {
    assert!(find_at("nothing here", 0).is_none());
    let mut names: Vec<_> = Rule::ALL.iter().map(|r| r.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Rule::ALL.len());
    for (i, r) in Rule::ALL.iter().enumerate() {
        assert_eq!(r.index(), i);
    }
}

#[test]
fn markers_name_their_rule() {
    for r in Rule::ALL {
        if matches!(r, Rule::CdpCapability | Rule::CdpId) {
            continue; // replaced by handles, not masked
        }
        assert_eq!(r.marker(), format!("[redacted:{}]", r.name()));
    }
}

#[test]
fn cdp_id_shapes() {
    assert!(is_cdp_id("8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1"));
    assert!(is_cdp_id("8e5b0e1c2f4d43a1b0b7a3f2e6d9c4b1"));
    assert!(!is_cdp_id("8e5b0e1c2f4d43a1b0b7a3f2e6d9C4B1"));
    assert!(is_cdp_id("3c8f9c3e-8a6b-4b5e-9f21-2d5b7f0e1a44"));
    assert!(!is_cdp_id("3c8f9c3e-8a6b-4b5e-9f21-2d5b7f0e1a4"));
    assert!(!is_cdp_id(""));
}

#[test]
fn detector_matches_at_the_expected_place() {
    let cases = [
        (
            "x -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- y",
            Detector::PrivateKey,
        ),
        ("t eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc", Detector::Jwt),
        (
            "k ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            Detector::KnownToken,
        ),
        ("u https://bob:pw@example.com/", Detector::Userinfo),
        ("ws://h/devtools/page/ABC", Detector::CdpCapability),
        ("/cb?code=abc", Detector::QueryParam),
        ("password=abc", Detector::KeyValue),
        (r#"{"name":"SID","value":"x"}"#, Detector::NameValue),
        (
            r#"<input name="csrf" type="hidden" value="x">"#,
            Detector::NameValue,
        ),
        ("Bearer abc123", Detector::SchemeCredential),
        ("8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1", Detector::CdpId),
    ];
    for (text, want) in cases {
        let got = find_at(text, 0).map(|h| h.detector);
        assert_eq!(got, Some(want), "{text}");
    }
}

#[test]
fn detector_indices_follow_the_table() {
    for (i, d) in Detector::ALL.iter().enumerate() {
        assert_eq!(d.index(), i, "{d:?}");
    }
}

/// Every group resolves to a slot in both compiled forms of its detector (the table compiles),
/// belongs to that detector's list, and every named group in every pattern is a [`Group`]: a
/// group renamed on one side only fails here.
#[test]
fn every_group_resolves_and_every_pattern_group_is_typed() {
    let compiled = &*COMPILED;
    assert_eq!(compiled.slots.len(), Group::ALL.len());
    for (i, g) in Group::ALL.iter().enumerate() {
        assert_eq!(*g as usize, i, "Group::ALL follows the declaration order");
        assert!(g.detector().groups().contains(g), "{g:?}");
    }
    for d in Detector::ALL {
        for g in d.groups() {
            assert_eq!(g.detector(), d, "{g:?}");
        }
        for re in [&compiled.each[d.index()], &compiled.exact[d.index()]] {
            let names: Vec<&str> = re
                .group_info()
                .pattern_names(PatternID::ZERO)
                .flatten()
                .collect();
            let typed: Vec<&str> = d.groups().iter().map(|g| g.name()).collect();
            let mut names_sorted = names.clone();
            names_sorted.sort_unstable();
            let mut typed_sorted = typed.clone();
            typed_sorted.sort_unstable();
            assert_eq!(names_sorted, typed_sorted, "{d:?}");
        }
    }
}

/// What a test expects of a match's parts.
type PartsCheck = fn(&Parts) -> bool;

/// Every shape a detector reports comes out as its typed parts, never `Unresolved`.
#[test]
fn every_form_yields_its_parts() {
    let cases: &[(&str, PartsCheck)] = &[
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc", |p| {
            *p == Parts::Whole
        }),
        ("https://bob:pw@example.com/", |p| {
            matches!(p, Parts::Userinfo { .. })
        }),
        ("ws://h/devtools/page/ABC", |p| {
            matches!(p, Parts::CdpCapability { .. })
        }),
        ("/cb?code=abc", |p| matches!(p, Parts::QueryParam { .. })),
        ("password=abc", |p| matches!(p, Parts::KeyValue { .. })),
        (r#"{"name":"SID","value":"x"}"#, |p| {
            matches!(
                p,
                Parts::NameValue {
                    form: Sibling::Json,
                    ..
                }
            )
        }),
        (r#"{"value":"x","name":"SID"}"#, |p| {
            matches!(
                p,
                Parts::NameValue {
                    form: Sibling::Json,
                    ..
                }
            )
        }),
        (r#"<input name="csrf" type="hidden" value="x">"#, |p| {
            matches!(
                p,
                Parts::NameValue {
                    form: Sibling::Html,
                    ..
                }
            )
        }),
        (r#"<input value=x type=hidden NAME='csrf'>"#, |p| {
            matches!(
                p,
                Parts::NameValue {
                    form: Sibling::Html,
                    ..
                }
            )
        }),
        ("Bearer abc123", |p| {
            matches!(p, Parts::SchemeCredential { .. })
        }),
    ];
    for (text, want) in cases {
        let hit = find_at(text, 0).expect("a match");
        assert!(want(&hit.parts), "{text}: {:?}", hit.parts);
    }
}

/// The HTML detector's captures, by hand: name and value spans with their quotes.
#[test]
fn html_attribute_spans() {
    for (text, name, value) in [
        (
            r#"<input name="_csrf" value="T1">"#,
            r#""_csrf""#,
            r#""T1""#,
        ),
        (r#"<input value='T1' NAME=_csrf>"#, "_csrf", "'T1'"),
        (
            r#"<input name=\"_csrf\" value=\"T1\">"#,
            r#"\"_csrf\""#,
            r#"\"T1\""#,
        ),
        (
            "name=&quot;_csrf&quot; value=&quot;T1&quot;",
            "&quot;_csrf&quot;",
            "&quot;T1&quot;",
        ),
        ("\\nname=_csrf\\n  value=T1", "_csrf", "T1"),
    ] {
        let hit = find_at(text, 0).expect("a match");
        let Parts::NameValue {
            name: (ns, ne),
            value: (vs, ve),
            form: Sibling::Html,
        } = hit.parts
        else {
            panic!("{text}: {:?}", hit.parts);
        };
        assert_eq!((&text[ns..ne], &text[vs..ve]), (name, value), "{text}");
    }
    for not_an_attribute in [
        "data-name=\"x\" value=\"y\"",
        "username=\"x\" value=\"y\"",
        "value=\"y\" data-name=\"x\"",
    ] {
        assert!(real_hits(not_an_attribute).is_empty(), "{not_an_attribute}");
    }
}

/// Every match in `text` that is one (a trigger that came to nothing is not).
fn real_hits(text: &str) -> Vec<Parts> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(hit) = find_at(text, pos) {
        if hit.parts != Parts::NoMatch {
            out.push(hit.parts);
        }
        pos = hit.start + 1;
    }
    out
}

/// A trigger that is not an attribute pair leaves the scan free to find what follows it.
#[test]
fn a_trigger_without_a_pair_hides_nothing() {
    let text = "value=1 eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc";
    let hit = find_at(text, 0).expect("the trigger");
    assert_eq!(hit.parts, Parts::NoMatch);
    assert_eq!(real_hits(text), [Parts::Whole]);
}
