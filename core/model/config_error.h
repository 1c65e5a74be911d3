// The error every config operation throws for what its caller got wrong (an unknown kind or
// field, a value of the wrong type, a required field left unset, malformed JSON): a user error
// in the sense of docs/errors.md, whose message names the kind, the field's full path and the
// file where there is one.
#pragma once

#include <stdexcept>

namespace mt {

class ConfigError : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

} // namespace mt
