// Optional dialect traits (see dialect_tracer.h), false or 0 where a dialect does not declare them:
// kClockFit (clock_fit.h), kReportWaitMs (a flush's wait for the library's reports),
// kCallbackTimes (launch callbacks' host times kept for records without timestamps),
// kThreadCursor (the record walk's position is the library's, one per thread: a walk that ends
// early must put it back, or the thread's next buffer is read from that position),
// kQuietWhenIdle (the library's activity kinds and launch callbacks may go off while no session
// is active and back on, with what it buffered still delivered: dialect_tracer_quiet.h),
// kSuspendWhenQuiet (a quiet tracer is let go, stop()'s sequence with its sessions kept, once the
// dialect's idle clock, D::armSuspend / D::cancelSuspend, runs out; attached again at wake).
#pragma once
#include <type_traits>

namespace ftp {

template <typename D, typename = void>
struct FitsClock : std::false_type {};
template <typename D>
struct FitsClock<D, std::void_t<decltype(D::kClockFit)>> : std::bool_constant<D::kClockFit> {};
template <typename D, typename = void>
struct ReportWaitMs : std::integral_constant<int, 0> {};
template <typename D>
struct ReportWaitMs<D, std::void_t<decltype(D::kReportWaitMs)>> : std::integral_constant<int, D::kReportWaitMs> {};
template <typename D, typename = void>
struct NotesCallbackTimes : std::false_type {};
template <typename D>
struct NotesCallbackTimes<D, std::void_t<decltype(D::kCallbackTimes)>> : std::bool_constant<D::kCallbackTimes> {};

template <typename D, typename = void>
struct ThreadCursor : std::false_type {};
template <typename D>
struct ThreadCursor<D, std::void_t<decltype(D::kThreadCursor)>> : std::bool_constant<D::kThreadCursor> {};

template <typename D, typename = void>
struct QuietWhenIdle : std::false_type {};
template <typename D>
struct QuietWhenIdle<D, std::void_t<decltype(D::kQuietWhenIdle)>> : std::bool_constant<D::kQuietWhenIdle> {};

template <typename D, typename = void>
struct SuspendsWhenQuiet : std::false_type {};
template <typename D>
struct SuspendsWhenQuiet<D, std::void_t<decltype(D::kSuspendWhenQuiet)>>
    : std::bool_constant<D::kSuspendWhenQuiet && D::kFinalizeAtStop> {};

}  // namespace ftp
