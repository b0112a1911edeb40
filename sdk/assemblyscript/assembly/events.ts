// Helpers for vox_event(kind, arg) (ABI §3).

import { EventCallEnd, EventCallStart, EventClear, EventDTMF, EventFlush } from "./abi";

/**
 * The name of an event kind as ABI.md writes it ("call_start", "dtmf", ...),
 * or "unknown" for kinds this SDK does not know. Kinds not known MUST be
 * ignored, returning 0: new kinds are added within ABI v1.
 */
export function eventName(kind: i32): string {
  switch (kind) {
    case EventCallStart: return "call_start";
    case EventCallEnd: return "call_end";
    case EventDTMF: return "dtmf";
    case EventClear: return "clear";
    case EventFlush: return "flush";
  }
  return "unknown";
}

/** True for the kinds ABI v1 defines (1 .. 5). */
export function isKnownEvent(kind: i32): bool {
  return kind >= EventCallStart && kind <= EventFlush;
}

/** True if arg of a DTMF event is a key the ABI names: 0-9, *, #, A-D. */
export function isDTMFKey(arg: i32): bool {
  return (arg >= 0x30 && arg <= 0x39) || arg == 0x2a || arg == 0x23 || (arg >= 0x41 && arg <= 0x44);
}
