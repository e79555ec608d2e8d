// Fault injection for tests: with TPUPERF_FAULT=<point>[:<n>[:<action>]] in the
// environment, the process acts the n-th time (default: the first) it reaches
// fault_point("<point>"). Actions:
//   kill (default)  SIGKILL itself, exactly like an OOM killer or a node failure would,
//                   with no chance to clean up;
//   hang            stop there forever (sleeping), like a rank stuck in a driver or on a
//                   dead file system: its peers must notice (train.stall_timeout_s).
// Without the variable a fault point costs one cached check.
#pragma once

namespace tpuperf {

void fault_point(const char* point);

}  // namespace tpuperf
