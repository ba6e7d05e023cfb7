#include <string>

#include "reports/html_template.hpp"
#include "reports/result_json.hpp"
#include "reports/saved_result.hpp"
#include "reports/sink.hpp"

namespace rooflens::reports {

namespace {

void replace(std::string& s, const std::string& marker, const std::string& with) {
  auto p = s.find(marker);
  if (p != std::string::npos) s.replace(p, marker.size(), with);
}

}  // namespace

void write_html(std::ostream& out, const nlohmann::json& result) {
  // Compact JSON; "</" escaped so no string in the data can close the script element.
  std::string data = result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), safe;
  safe.reserve(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] == '<' && i + 1 < data.size() && data[i + 1] == '/')
      safe += "<\\";
    else
      safe += data[i];
  }
  std::string page = kHtmlPage;
  replace(page, "/*ROOFLENS_CSS*/", kHtmlCss);
  replace(page, "/*ROOFLENS_DOM_JS*/", kHtmlDomJs);
  replace(page, "/*ROOFLENS_ROOFLINE_JS*/", kHtmlRooflineJs);
  replace(page, "/*ROOFLENS_JS*/", kHtmlJs);
  replace(page, "/*ROOFLENS_COMPARE_JS*/", kHtmlCompareJs);
  replace(page, "/*ROOFLENS_TRAINING_JS*/", kHtmlTrainingJs);
  replace(page, "/*ROOFLENS_SERVE_JS*/", kHtmlServeJs);
  replace(page, "/*ROOFLENS_DATA*/", safe);
  out << page;
}

void HtmlSink::write(std::ostream& out, const Analysis& a) const {
  write_html(out, result_json(a));
}

}  // namespace rooflens::reports
