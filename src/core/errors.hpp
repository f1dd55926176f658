#pragma once
#include <stdexcept>
#include <string>

namespace railcoll {

// Bad input from a user (CLI argument, API argument): the message names the problem.
struct InputError : std::runtime_error {
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace railcoll
