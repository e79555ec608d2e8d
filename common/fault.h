// Fault injection for tests: with TPUPERF_FAULT=<point>[:<n>] in the environment, the
// process kills itself with SIGKILL the n-th time (default: the first) it reaches
// fault_point("<point>") — exactly like an OOM killer or a node failure would, with no
// chance to clean up. Without the variable a fault point costs one cached check.
#pragma once

namespace tpuperf {

void fault_point(const char* point);

}  // namespace tpuperf
