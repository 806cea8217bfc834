// The plan certificate (docs/plans.md): the scheduled program is checked, not
// just its graph. Checks, each a passes/certificate.h CertificateCheck:
//  * "schedule": dependencies point to earlier steps; every region lies in its
//    buffer, on the device the step reads or writes there (a kernel or copy on its
//    device, a transfer reading on the sender and writing on the receiver, a
//    collective on its participants only); streams match the step kinds;
//  * "dataflow": every element a step reads of a buffer that steps write was
//    written on that device exactly once by steps that happen before it (exactly:
//    the predecessors' boxes partition the read), and no writer is unordered with it;
//  * "races": no two steps that may run at once write intersecting boxes of a buffer;
//  * "arena": buffers of one device whose arena bytes overlap are never in use at
//    once (every access of one happens before every access of the other);
//  * "collectives": every participant contributes and receives; an all_reduce or
//    reduce_scatter sums every partial once, an all_gather's pieces tile its box;
//  * "outputs": the output pieces tile every graph output exactly, each written.
#pragma once

#include "passes/certificate.h"
#include "plan/plan.h"

namespace tapestry::plan {

Certificate certify_plan(const Plan &plan);

}  // namespace tapestry::plan
