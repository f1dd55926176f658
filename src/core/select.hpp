// Selection moved to src/select/ (the IR's selection layer). This forwarding
// header keeps code written against the old path building while the branches
// that include it are merged; include "select/select.hpp" instead.
#pragma once
#include "select/select.hpp"
