// What a person would see of a byte stream on a terminal, for the tests of terminal output:
// \r returns to the row's start, \n starts a new row at its start (a terminal's usual output
// translation, ONLCR), ESC[K erases from the cursor to the row's end, printable characters
// overwrite. Other control sequences (the log level's colours) show nothing. No wrapping: the
// tests give the terminal room for their lines.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mt::tune_test {

class Screen {
public:
  void feed(std::string_view bytes) {
    for (size_t i = 0; i < bytes.size(); ++i) {
      char c = bytes[i];
      if (c == '\r') {
        col_ = 0;
      } else if (c == '\n') {
        rows_.emplace_back();
        col_ = 0;
      } else if (c == '\x1b' && i + 1 < bytes.size() && bytes[i + 1] == '[') {
        size_t j = i + 2;
        std::string params;
        while (j < bytes.size() && (bytes[j] < 0x40 || bytes[j] > 0x7e))
          params += bytes[j++];
        if (j < bytes.size() && bytes[j] == 'K' && (params.empty() || params == "0") &&
            col_ < rows_.back().size())
          rows_.back().resize(col_);
        i = j;
      } else if (static_cast<unsigned char>(c) >= 0x20) {
        std::string& row = rows_.back();
        if (col_ < row.size())
          row[col_] = c;
        else
          row.append(col_ - row.size(), ' ').push_back(c);
        ++col_;
      }
    }
  }
  // The rows ended by a newline, oldest first.
  std::vector<std::string> finished_rows() const {
    return std::vector<std::string>(rows_.begin(), rows_.end() - 1);
  }
  // The row the cursor is on.
  const std::string& current_row() const { return rows_.back(); }

private:
  std::vector<std::string> rows_{std::string()};
  size_t col_ = 0;
};

} // namespace mt::tune_test
