use super::*;
use std::collections::HashMap;

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k| vars.get(k).cloned()
}

#[test]
fn the_flag_and_the_base_variable_get_the_traces_path_the_traces_variable_is_used_as_it_is() {
    let none = env(&[]);
    assert_eq!(traces_endpoint(None, &none).unwrap(), None);
    let url = |flag, vars: &[(&str, &str)]| {
        traces_endpoint(flag, env(vars))
            .unwrap()
            .map(|u| u.to_string())
    };
    assert_eq!(
        url(Some("http://127.0.0.1:4318"), &[]).as_deref(),
        Some("http://127.0.0.1:4318/v1/traces")
    );
    assert_eq!(
        url(Some("http://collector:4318/otlp/"), &[]).as_deref(),
        Some("http://collector:4318/otlp/v1/traces")
    );
    assert_eq!(
        url(Some("https://collector/v1/traces"), &[]).as_deref(),
        Some("https://collector/v1/traces")
    );
    // The flag wins over both variables.
    assert_eq!(
        url(
            Some("http://a:1"),
            &[
                (ENV_TRACES_ENDPOINT, "http://b:2/x"),
                (ENV_ENDPOINT, "http://c:3")
            ]
        )
        .as_deref(),
        Some("http://a:1/v1/traces")
    );
    assert_eq!(
        url(
            None,
            &[
                (ENV_TRACES_ENDPOINT, "http://b:2/x"),
                (ENV_ENDPOINT, "http://c:3")
            ]
        )
        .as_deref(),
        Some("http://b:2/x")
    );
    assert_eq!(
        url(None, &[(ENV_ENDPOINT, "http://c:3")]).as_deref(),
        Some("http://c:3/v1/traces")
    );
    // Empty is unset.
    assert_eq!(url(None, &[(ENV_ENDPOINT, " ")]), None);
}

#[test]
fn an_endpoint_that_is_not_http_is_refused_in_one_line_naming_where_it_came_from() {
    for (flag, vars, whence) in [
        (Some("collector:4318"), vec![], "--otlp-endpoint"),
        (Some("grpc://collector:4317"), vec![], "--otlp-endpoint"),
        (None, vec![(ENV_ENDPOINT, "not a url")], ENV_ENDPOINT),
        (
            None,
            vec![(ENV_TRACES_ENDPOINT, "file:///tmp/x")],
            ENV_TRACES_ENDPOINT,
        ),
    ] {
        let e = traces_endpoint(flag, env(&vars)).unwrap_err();
        assert!(e.starts_with(whence), "{e}");
        assert!(!e.contains('\n') && e.contains("http://"), "{e}");
    }
}

#[test]
fn the_service_name_is_the_variables_or_ours() {
    assert_eq!(service_name(env(&[])), "cdp-relay");
    assert_eq!(
        service_name(env(&[(ENV_SERVICE_NAME, "checkout-agent")])),
        "checkout-agent"
    );
}

#[test]
fn a_kept_frame_is_no_event_and_a_click_is_one() {
    use cdp_evidence::{Action, ActionMethod, Record, RecordKind};
    use cdp_sanitize::SafeText;
    let action =
        |m: ActionMethod| Record::new(SafeText::literal("cdp"), RecordKind::Action(Action::new(m)));
    assert!(record_event(&action(ActionMethod::Frame)).is_none());
    let (name, _) = record_event(&action(ActionMethod::Click)).expect("an event");
    assert_eq!(name, "cdp_relay.action");
}
