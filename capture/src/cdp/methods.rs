//! The one table of CDP methods the relay reads or sends. Every other method is skipped
//! unparsed, except that client messages are first offered to `typed.rs`, which reads typing in
//! any spelling (a prefilter here could not see through escapes or duplicate keys).
//!
//! Each name appears once in the workspace, and no other code matches a method by its string: a
//! method the evidence records by its CDP name is spelled by the evidence vocabulary
//! ([`ActionMethod`], below capture), and this table names it through [`recorded`]; every other
//! name is spelled here. The table generates the enums both observers match on (without `_`
//! arms, so a method added here is a compile error until every reader of its kind handles it):
//!
//! - [`CommandMethod`]: client commands the traffic reader records (the relay's own observer
//!   also sends a few of them);
//! - [`Call`]: the other commands the relay's own observer sends on its connection;
//! - [`Event`]: browser events, by who reads them. [`TargetEvent`]s (targets appear, change,
//!   attach, go) and [`PageEvent`]s (what a page reports: navigations, console, network) are
//!   read by both observers, through one handler (`pages/events.rs`); [`TrafficEvent`]s only
//!   by the traffic reader, [`DirectEvent`]s only by the relay's own.
//!
//! Variants are named domain first, then method (`NetworkLoadingFailed`), except
//! [`TargetEvent`]'s, which are all of the `Target` domain.

use cdp_evidence::ActionMethod;

/// The CDP name of a method the evidence records by it, as the evidence vocabulary spells it.
const fn recorded(method: ActionMethod) -> &'static str {
    method.as_str()
}

macro_rules! cdp_methods {
    (
        commands { $($command:ident = $command_name:expr,)* }
        calls { $($call:ident = $call_name:expr,)* }
        target_events { $($target:ident = $target_name:expr,)* }
        page_events { $($page:ident = $page_name:expr,)* }
        passive_events { $($passive:ident = $passive_name:expr,)* }
        observer_events { $($observer:ident = $observer_name:expr,)* }
    ) => {
        // The names as constants, one namespace per kind, so that `parse` can match on them
        // (a pattern takes a constant, not an expression).
        struct CommandName;
        struct CallName;
        struct EventName;
        #[allow(non_upper_case_globals)]
        impl CommandName { $(const $command: &'static str = $command_name;)* }
        #[allow(non_upper_case_globals)]
        impl CallName { $(const $call: &'static str = $call_name;)* }
        #[allow(non_upper_case_globals)]
        impl EventName {
            $(const $target: &'static str = $target_name;)*
            $(const $page: &'static str = $page_name;)*
            $(const $passive: &'static str = $passive_name;)*
            $(const $observer: &'static str = $observer_name;)*
        }

        /// A client command that can become evidence.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum CommandMethod { $($command,)* }

        /// A command only the relay's own observer sends.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Call { $($call,)* }

        /// An event about targets (created, changed, attached, detached, destroyed).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum TargetEvent { $($target,)* }

        /// An event a page reports on a session attached to it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum PageEvent { $($page,)* }

        /// An event only the traffic reader reads.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum TrafficEvent { $($passive,)* }

        /// An event only the direct reader (the relay's own observer) reads.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum DirectEvent { $($observer,)* }

        /// A browser event the relay reads, by who reads it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Event {
            Target(TargetEvent),
            Page(PageEvent),
            Passive(TrafficEvent),
            TrafficReader(DirectEvent),
        }

        impl CommandMethod {
            /// Every command, for tests.
            #[cfg(test)]
            pub(crate) const ALL: &'static [CommandMethod] = &[$(CommandMethod::$command,)*];

            pub(crate) fn parse(name: &str) -> Option<CommandMethod> {
                match name {
                    $(CommandName::$command => Some(CommandMethod::$command),)*
                    _ => None,
                }
            }

            /// The CDP name, also the `method` of the action it records.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(CommandMethod::$command => CommandName::$command,)*
                }
            }
        }

        impl Call {
            /// Every call, for tests.
            #[cfg(test)]
            pub(crate) const ALL: &'static [Call] = &[$(Call::$call,)*];

            /// The CDP name.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(Call::$call => CallName::$call,)*
                }
            }
        }

        impl Event {
            /// Every event, for tests.
            #[cfg(test)]
            pub(crate) const ALL: &'static [Event] = &[
                $(Event::Target(TargetEvent::$target),)*
                $(Event::Page(PageEvent::$page),)*
                $(Event::Passive(TrafficEvent::$passive),)*
                $(Event::TrafficReader(DirectEvent::$observer),)*
            ];

            /// One match over every name: a name listed twice is an unreachable pattern.
            pub(crate) fn parse(name: &str) -> Option<Event> {
                Some(match name {
                    $(EventName::$target => Event::Target(TargetEvent::$target),)*
                    $(EventName::$page => Event::Page(PageEvent::$page),)*
                    $(EventName::$passive => Event::Passive(TrafficEvent::$passive),)*
                    $(EventName::$observer => Event::TrafficReader(DirectEvent::$observer),)*
                    _ => return None,
                })
            }

            /// The CDP name (the tests check the table with it).
            #[cfg(test)]
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(Event::Target(TargetEvent::$target) => EventName::$target,)*
                    $(Event::Page(PageEvent::$page) => EventName::$page,)*
                    $(Event::Passive(TrafficEvent::$passive) => EventName::$passive,)*
                    $(Event::TrafficReader(DirectEvent::$observer) => EventName::$observer,)*
                }
            }
        }
    };
}

impl Event {
    /// Does the traffic reader read it? (It skips the rest unparsed.)
    pub(crate) fn passive(self) -> bool {
        !matches!(self, Event::TrafficReader(_))
    }
}

cdp_methods! {
    commands {
        // Recorded as actions by their CDP name.
        PageNavigate = recorded(ActionMethod::PageNavigate),
        PageReload = recorded(ActionMethod::PageReload),
        PageNavigateToHistoryEntry = recorded(ActionMethod::PageNavigateToHistoryEntry),
        PageStopLoading = recorded(ActionMethod::PageStopLoading),
        PageStartScreencast = recorded(ActionMethod::PageStartScreencast),
        PageStopScreencast = recorded(ActionMethod::PageStopScreencast),
        PagePrintToPdf = recorded(ActionMethod::PagePrintToPdf),
        PageCaptureScreenshot = recorded(ActionMethod::PageCaptureScreenshot),
        DomSetFileInputFiles = recorded(ActionMethod::DomSetFileInputFiles),
        RuntimeEvaluate = recorded(ActionMethod::RuntimeEvaluate),
        RuntimeCallFunctionOn = recorded(ActionMethod::RuntimeCallFunctionOn),
        TargetCreateTarget = recorded(ActionMethod::TargetCreateTarget),
        TargetCloseTarget = recorded(ActionMethod::TargetCloseTarget),
        TargetAttachToTarget = recorded(ActionMethod::TargetAttachToTarget),
        TargetActivateTarget = recorded(ActionMethod::TargetActivateTarget),
        BrowserClose = recorded(ActionMethod::BrowserClose),
        // Recorded as the relay's own verbs (click, type, …), or not at all.
        InputDispatchMouseEvent = "Input.dispatchMouseEvent",
        InputDispatchTouchEvent = "Input.dispatchTouchEvent",
        InputDispatchKeyEvent = "Input.dispatchKeyEvent",
        InputInsertText = "Input.insertText",
        InputImeSetComposition = "Input.imeSetComposition",
        DomSetAttributeValue = "DOM.setAttributeValue",
        DomSetAttributesAsText = "DOM.setAttributesAsText",
        DomSetNodeValue = "DOM.setNodeValue",
        TargetSendMessageToTarget = "Target.sendMessageToTarget",
    }
    calls {
        TargetSetDiscoverTargets = recorded(ActionMethod::TargetSetDiscoverTargets),
        TargetSetAutoAttach = recorded(ActionMethod::TargetSetAutoAttach),
        TargetDetachFromTarget = "Target.detachFromTarget",
        RuntimeAddBinding = "Runtime.addBinding",
        RuntimeEnable = "Runtime.enable",
        RuntimeGetIsolateId = "Runtime.getIsolateId",
        PageEnable = "Page.enable",
        PageAddScriptToEvaluateOnNewDocument = "Page.addScriptToEvaluateOnNewDocument",
        PageCreateIsolatedWorld = "Page.createIsolatedWorld",
        PageGetLayoutMetrics = "Page.getLayoutMetrics",
        NetworkEnable = "Network.enable",
        LogEnable = "Log.enable",
    }
    target_events {
        AttachedToTarget = "Target.attachedToTarget",
        DetachedFromTarget = "Target.detachedFromTarget",
        TargetCreated = "Target.targetCreated",
        TargetInfoChanged = "Target.targetInfoChanged",
        TargetDestroyed = "Target.targetDestroyed",
    }
    page_events {
        NetworkRequestWillBeSent = "Network.requestWillBeSent",
        NetworkResponseReceived = "Network.responseReceived",
        NetworkLoadingFailed = "Network.loadingFailed",
        NetworkLoadingFinished = "Network.loadingFinished",
        RuntimeConsoleApiCalled = "Runtime.consoleAPICalled",
        RuntimeExceptionThrown = "Runtime.exceptionThrown",
        LogEntryAdded = "Log.entryAdded",
        PageFrameNavigated = "Page.frameNavigated",
        PageFrameStartedNavigating = "Page.frameStartedNavigating",
    }
    passive_events {
        PageScreencastFrame = recorded(ActionMethod::PageScreencastFrame),
        TargetReceivedMessageFromTarget = "Target.receivedMessageFromTarget",
    }
    observer_events {
        RuntimeExecutionContextCreated = "Runtime.executionContextCreated",
        RuntimeExecutionContextDestroyed = "Runtime.executionContextDestroyed",
        RuntimeExecutionContextsCleared = "Runtime.executionContextsCleared",
        RuntimeBindingCalled = "Runtime.bindingCalled",
        PageLoadEventFired = "Page.loadEventFired",
        PageJavascriptDialogOpening = "Page.javascriptDialogOpening",
        PageJavascriptDialogClosed = "Page.javascriptDialogClosed",
        InspectorTargetCrashed = "Inspector.targetCrashed",
        InspectorTargetReloadedAfterCrash = "Inspector.targetReloadedAfterCrash",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_round_trip_and_roles_do_not_overlap() {
        for &m in CommandMethod::ALL {
            assert_eq!(CommandMethod::parse(m.name()), Some(m));
            assert_eq!(Event::parse(m.name()), None, "{}", m.name());
        }
        for &e in Event::ALL {
            assert_eq!(Event::parse(e.name()), Some(e));
            assert_eq!(CommandMethod::parse(e.name()), None, "{}", e.name());
        }
        assert_eq!(CommandMethod::parse("Page.enable"), None);
        assert_eq!(Event::parse("Page.lifecycleEvent"), None);
    }

    #[test]
    fn each_name_appears_once() {
        let mut seen = HashSet::new();
        let names = CommandMethod::ALL
            .iter()
            .map(|m| m.name())
            .chain(Call::ALL.iter().map(|c| c.name()))
            .chain(Event::ALL.iter().map(|e| e.name()));
        for name in names {
            assert!(seen.insert(name), "{name} is listed twice");
        }
        // The relay's own calls are never taken for a client's evidence.
        for &c in Call::ALL {
            assert_eq!(CommandMethod::parse(c.name()), None, "{}", c.name());
        }
    }

    #[test]
    fn the_passive_observer_skips_what_only_the_relays_observer_reads() {
        let read = |name| Event::parse(name).is_some_and(Event::passive);
        assert!(read("Network.loadingFailed") && read("Target.attachedToTarget"));
        assert!(read("Page.screencastFrame"));
        // Common on every page, read by the relay's own observer on its own sessions only.
        assert!(!read("Page.loadEventFired") && !read("Runtime.executionContextCreated"));
    }
}
