//! The one table of CDP methods the observer reads. Every other method is skipped unparsed,
//! except that client messages are first offered to `typed.rs`, which reads typing in any
//! spelling (a prefilter here could not see through escapes or duplicate keys).
//!
//! Each name appears once, here; the table generates the two enums the observer matches on
//! (without `_` arms, so a method added here is a compile error until it is handled).

macro_rules! cdp_methods {
    (
        commands { $($command:ident = $command_name:literal,)* }
        events { $($event:ident = $event_name:literal,)* }
    ) => {
        /// A client command that can become evidence.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum CommandMethod { $($command,)* }

        /// A browser event the observer reads.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum EventMethod { $($event,)* }

        impl CommandMethod {
            /// Every command, for tests.
            #[cfg(test)]
            pub(crate) const ALL: &'static [CommandMethod] = &[$(CommandMethod::$command,)*];

            pub(crate) fn parse(name: &str) -> Option<CommandMethod> {
                match name {
                    $($command_name => Some(CommandMethod::$command),)*
                    _ => None,
                }
            }

            /// The CDP name, also the `method` of the action it records.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(CommandMethod::$command => $command_name,)*
                }
            }
        }

        impl EventMethod {
            /// Every event, for tests.
            #[cfg(test)]
            pub(crate) const ALL: &'static [EventMethod] = &[$(EventMethod::$event,)*];

            pub(crate) fn parse(name: &str) -> Option<EventMethod> {
                match name {
                    $($event_name => Some(EventMethod::$event),)*
                    _ => None,
                }
            }

            /// The CDP name.
            #[cfg(test)]
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(EventMethod::$event => $event_name,)*
                }
            }
        }
    };
}

cdp_methods! {
    commands {
        PageNavigate = "Page.navigate",
        PageReload = "Page.reload",
        PageNavigateToHistoryEntry = "Page.navigateToHistoryEntry",
        PageStopLoading = "Page.stopLoading",
        PageStartScreencast = "Page.startScreencast",
        PageStopScreencast = "Page.stopScreencast",
        PagePrintToPdf = "Page.printToPDF",
        PageCaptureScreenshot = "Page.captureScreenshot",
        InputDispatchMouseEvent = "Input.dispatchMouseEvent",
        InputDispatchTouchEvent = "Input.dispatchTouchEvent",
        InputDispatchKeyEvent = "Input.dispatchKeyEvent",
        InputInsertText = "Input.insertText",
        InputImeSetComposition = "Input.imeSetComposition",
        DomSetAttributeValue = "DOM.setAttributeValue",
        DomSetAttributesAsText = "DOM.setAttributesAsText",
        DomSetNodeValue = "DOM.setNodeValue",
        DomSetFileInputFiles = "DOM.setFileInputFiles",
        RuntimeEvaluate = "Runtime.evaluate",
        RuntimeCallFunctionOn = "Runtime.callFunctionOn",
        TargetCreateTarget = "Target.createTarget",
        TargetCloseTarget = "Target.closeTarget",
        TargetAttachToTarget = "Target.attachToTarget",
        TargetActivateTarget = "Target.activateTarget",
        TargetSendMessageToTarget = "Target.sendMessageToTarget",
        BrowserClose = "Browser.close",
    }
    events {
        NetworkRequestWillBeSent = "Network.requestWillBeSent",
        NetworkResponseReceived = "Network.responseReceived",
        NetworkLoadingFailed = "Network.loadingFailed",
        NetworkLoadingFinished = "Network.loadingFinished",
        RuntimeConsoleApiCalled = "Runtime.consoleAPICalled",
        RuntimeExceptionThrown = "Runtime.exceptionThrown",
        LogEntryAdded = "Log.entryAdded",
        PageFrameNavigated = "Page.frameNavigated",
        PageFrameStartedNavigating = "Page.frameStartedNavigating",
        PageScreencastFrame = "Page.screencastFrame",
        TargetAttachedToTarget = "Target.attachedToTarget",
        TargetDetachedFromTarget = "Target.detachedFromTarget",
        TargetTargetCreated = "Target.targetCreated",
        TargetTargetInfoChanged = "Target.targetInfoChanged",
        TargetTargetDestroyed = "Target.targetDestroyed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_roles_do_not_overlap() {
        for &m in CommandMethod::ALL {
            assert_eq!(CommandMethod::parse(m.name()), Some(m));
            assert_eq!(EventMethod::parse(m.name()), None, "{}", m.name());
        }
        for &e in EventMethod::ALL {
            assert_eq!(EventMethod::parse(e.name()), Some(e));
            assert_eq!(CommandMethod::parse(e.name()), None, "{}", e.name());
        }
        assert_eq!(CommandMethod::parse("Page.enable"), None);
        assert_eq!(EventMethod::parse("Page.lifecycleEvent"), None);
    }
}
