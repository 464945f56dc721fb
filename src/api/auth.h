// Bearer-token authentication of API requests (RFC 6750 `Authorization: Bearer <token>`).
// The comparison takes the same time whatever prefix of the token a client guessed, so the
// token cannot be found one character at a time by timing the 401s.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

namespace gpuscale::api {

// True when a and b are equal; the time taken depends only on their lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// True when `authorization` (the header's value, "" when absent) carries `token`. The
// scheme name is case-insensitive ("bearer" works too). REQUIRES: token non-empty.
bool BearerTokenMatches(std::string_view authorization, std::string_view token);

}  // namespace gpuscale::api
