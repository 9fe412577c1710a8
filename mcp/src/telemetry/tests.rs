use super::*;
use opentelemetry::trace::{SpanId, TraceId};
use std::collections::HashMap;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn meta(pairs: &[(&str, &str)]) -> RequestMetaObject {
    let mut m = RequestMetaObject::new();
    for (k, v) in pairs {
        match *k {
            "traceparent" => m.set_traceparent(*v),
            "tracestate" => m.set_tracestate(*v),
            _ => unreachable!(),
        }
    }
    m
}

#[test]
fn span_names_and_attributes_follow_the_mcp_convention() {
    assert_eq!(span_name("tools/call", Some("click")), "tools/call click");
    assert_eq!(span_name("tools/list", None), "tools/list");
    let empty = RequestMetaObject::new();
    let id = NumberOrString::Number(7);
    let call = Request {
        method: "tools/call",
        tool: Some("click"),
        id: &id,
        meta: &empty,
        session: None,
        protocol: Some("2025-06-18"),
        resource: None,
    };
    let attrs: HashMap<String, String> = request_attributes(&call)
        .into_iter()
        .map(|kv| (kv.key.to_string(), kv.value.to_string()))
        .collect();
    for (k, v) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "click"),
        ("gen_ai.operation.name", "execute_tool"),
        ("jsonrpc.request.id", "7"),
        ("network.transport", "pipe"),
        ("mcp.protocol.version", "2025-06-18"),
    ] {
        assert_eq!(attrs.get(k).map(String::as_str), Some(v), "{k}");
    }
    assert!(!attrs.contains_key("mcp.session.id"));
    let sid = NumberOrString::String("req-1".into());
    let read = Request {
        method: "resources/read",
        tool: None,
        id: &sid,
        meta: &empty,
        session: Some("s1"),
        protocol: None,
        resource: Some("evidence://runs"),
    };
    let attrs: HashMap<String, String> = request_attributes(&read)
        .into_iter()
        .map(|kv| (kv.key.to_string(), kv.value.to_string()))
        .collect();
    assert_eq!(attrs["jsonrpc.request.id"], "req-1");
    assert_eq!(attrs["mcp.session.id"], "s1");
    assert_eq!(attrs["mcp.resource.uri"], "evidence://runs");
    assert!(!attrs.contains_key("gen_ai.tool.name"));
    assert!(!attrs.contains_key("gen_ai.operation.name"));
}

#[test]
fn error_type_is_the_json_rpc_code_or_tool_error() {
    let rpc: Result<bool, ErrorData> = Err(ErrorData::internal_error("boom", None));
    assert_eq!(error_type(&rpc, |e| *e).as_deref(), Some("-32603"));
    let params: Result<bool, ErrorData> = Err(ErrorData::invalid_params("no tool", None));
    assert_eq!(error_type(&params, |e| *e).as_deref(), Some("-32602"));
    assert_eq!(
        error_type(&Ok::<_, ErrorData>(true), |e| *e).as_deref(),
        Some("tool_error")
    );
    assert_eq!(error_type(&Ok::<_, ErrorData>(false), |e| *e), None);
}

#[test]
fn the_agents_traceparent_is_the_parent() {
    let cx = parent_of(&meta(&[
        ("traceparent", TRACEPARENT),
        ("tracestate", "a=1,b=2"),
    ]));
    let sc = cx.span().span_context().clone();
    assert!(sc.is_valid() && sc.is_remote() && sc.is_sampled());
    assert_eq!(
        sc.trace_id(),
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap()
    );
    assert_eq!(sc.span_id(), SpanId::from_hex("00f067aa0ba902b7").unwrap());
    assert_eq!(sc.trace_state().header(), "a=1,b=2");
}

#[test]
fn an_invalid_traceparent_is_no_parent() {
    for bad in [
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "zz-not-a-trace",
    ] {
        let cx = parent_of(&meta(&[("traceparent", bad)]));
        assert!(!cx.span().span_context().is_valid(), "{bad:?}");
    }
    assert!(!parent_of(&RequestMetaObject::new())
        .span()
        .span_context()
        .is_valid());
}

#[test]
fn the_context_passed_on_is_a_w3c_traceparent_with_its_tracestate() {
    let cx = parent_of(&meta(&[
        ("traceparent", TRACEPARENT),
        ("tracestate", "a=1"),
    ]));
    let mut forwarded = None;
    inject(&cx, &mut forwarded);
    let m = forwarded.expect("a _meta is made");
    assert_eq!(m.get_traceparent(), Some(TRACEPARENT));
    assert_eq!(m.get_tracestate(), Some("a=1"));
    // Without tracestate, none is invented.
    let cx = parent_of(&meta(&[("traceparent", TRACEPARENT)]));
    let mut forwarded = Some(RequestMetaObject::new());
    inject(&cx, &mut forwarded);
    let m = forwarded.unwrap();
    assert_eq!(m.get_traceparent(), Some(TRACEPARENT));
    assert_eq!(m.get_tracestate(), None);
}

#[test]
fn with_telemetry_off_the_agents_context_passes_through_and_none_is_made_up() {
    let id = NumberOrString::Number(1);
    let with = meta(&[("traceparent", TRACEPARENT)]);
    let r = |m| Request {
        method: "tools/call",
        tool: Some("click"),
        id: &id,
        meta: m,
        session: None,
        protocol: None,
        resource: None,
    };
    let span = RequestSpan::begin(None, &r(&with));
    let mut forwarded = None;
    span.propagate(&mut forwarded);
    assert_eq!(forwarded.unwrap().get_traceparent(), Some(TRACEPARENT));
    let empty = RequestMetaObject::new();
    let span = RequestSpan::begin(None, &r(&empty));
    let mut forwarded = None;
    span.propagate(&mut forwarded);
    assert!(forwarded.is_none());
}
