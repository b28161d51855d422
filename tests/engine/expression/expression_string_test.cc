// String operators, against MongoDB's documented examples, plus UTF-8
// edges, null/missing and error codes.
#include <string>

#include "tests/engine/expression/expression_test_util.h"

namespace gatedb {
namespace expression {
namespace test {
namespace {

TEST(ConcatTest, DocumentedExample) {
  const char* e = R"({"$concat": ["$item", " - ", "$description"]})";
  RunCases({
      {e, R"({"item": "abc", "description": "product 1"})", R"("abc - product 1")"},
      {e, R"({"item": "xyz", "description": null})", "null"},
      {e, R"({"item": "jkl"})", "null"},
      {R"({"$concat": []})", "{}", R"("")"},
      {R"({"$concat": ["a", 1]})", "{}", "error:16702"},
      {R"({"$concat": [null, 1]})", "{}", "null"},
  });
}

TEST(SubstrTest, DocumentedExamples) {
  const char* q = R"({"quarter": "13Q1"})";
  RunCases({
      {R"({"$substr": ["$quarter", 0, 2]})", q, R"("13")"},
      {R"({"$substr": ["$quarter", 2, -1]})", q, R"("Q1")"},
      {R"({"$substrBytes": ["$quarter", 0, 2]})", q, R"("13")"},
      {R"({"$substrBytes": ["$quarter", 2, {"$subtract": [{"$strLenBytes": "$quarter"}, 2]}]})", q, R"("Q1")"},
      // "cafétéria": é is two bytes (3 and 4).
      {R"({"$substrBytes": ["$name", 0, 3]})", R"({"name": "cafétéria"})", R"("caf")"},
      {R"({"$substrBytes": ["$name", 5, 4]})", R"({"name": "cafétéria"})", R"("tér")"},
      {R"({"$substrBytes": ["$name", 0, 4]})", R"({"name": "cafétéria"})", "error:28657"},
      {R"({"$substrBytes": ["$name", 4, 2]})", R"({"name": "cafétéria"})", "error:28656"},
      {R"({"$substrBytes": ["hello", 10, 2]})", "{}", R"("")"},
      {R"({"$substrBytes": ["hello", 1.9, 2.5]})", "{}", R"("el")"},
      {R"({"$substrBytes": [12345, 1, 2]})", "{}", R"("23")"},
      {R"({"$substrBytes": [null, 0, 2]})", "{}", R"("")"},
      {R"({"$substrBytes": ["hello", -1, 2]})", "{}", "error:50752"},
      {R"({"$substrBytes": ["hello", "1", 2]})", "{}", "error:16034"},
      {R"({"$substrBytes": ["hello", 1, "2"]})", "{}", "error:16035"},
      {R"({"$substrBytes": [[1], 1, 2]})", "{}", "error:16007"},
  });
}

TEST(SubstrCPTest, DocumentedExamples) {
  RunCases({
      {R"({"$substrCP": ["$quarter", 0, 2]})", R"({"quarter": "13Q1"})", R"("13")"},
      {R"({"$substrCP": ["$quarter", 2, {"$subtract": [{"$strLenCP": "$quarter"}, 2]}]})",
       R"({"quarter": "13Q1"})", R"("Q1")"},
      {R"({"$substrCP": ["$name", 0, 3]})", R"({"name": "寿司sushi"})", R"("寿司s")"},
      {R"({"$substrCP": ["$name", 1, 100]})", R"({"name": "寿司sushi"})", R"("司sushi")"},
      {R"({"$substrCP": ["abc", 5, 1]})", "{}", R"("")"},
      {R"({"$substrCP": ["$nope", 0, 1]})", "{}", R"("")"},
      {R"({"$substrCP": ["abc", "a", 1]})", "{}", "error:34450"},
      {R"({"$substrCP": ["abc", 1.5, 1]})", "{}", "error:34451"},
      {R"({"$substrCP": ["abc", 0, "a"]})", "{}", "error:34452"},
      {R"({"$substrCP": ["abc", 0, 1.5]})", "{}", "error:34453"},
      {R"({"$substrCP": ["abc", 0, -1]})", "{}", "error:34454"},
      {R"({"$substrCP": ["abc", -1, 1]})", "{}", "error:34455"},
      {R"({"$substrCP": ["abc", 0]})", "{}", "error:16020"},
  });
}

TEST(CaseTest, ToLowerToUpperStrcasecmp) {
  RunCases({
      {R"({"$toLower": "$item"})", R"({"item": "ABC1"})", R"("abc1")"},
      {R"({"$toUpper": "$item"})", R"({"item": "abc1"})", R"("ABC1")"},
      {R"({"$toUpper": "$description"})", R"({"description": "Product 1"})", R"("PRODUCT 1")"},
      {R"({"$toLower": null})", "{}", R"("")"},
      {R"({"$toUpper": 12})", "{}", R"("12")"},
      {R"({"$toLower": "ÉCOLE"})", "{}", R"("École")"},  // ASCII only, as in MongoDB
      {R"({"$toLower": [[1]]})", "{}", "error:16007"},
      // MongoDB's $strcasecmp example against "13q4".
      {R"({"$strcasecmp": ["$quarter", "13q4"]})", R"({"quarter": "13Q1"})", "-1"},
      {R"({"$strcasecmp": ["$quarter", "13q4"]})", R"({"quarter": "13Q4"})", "0"},
      {R"({"$strcasecmp": ["$quarter", "13q4"]})", R"({"quarter": "14Q2"})", "1"},
      {R"({"$strcasecmp": [null, ""]})", "{}", "0"},
  });
}

TEST(SplitTest, DocumentedExampleAndEdges) {
  RunCases({
      {R"({"$split": ["$city", ", "]})", R"({"city": "Bakersfield, CA"})", R"(["Bakersfield", "CA"])"},
      {R"({"$split": ["a,b,,c", ","]})", "{}", R"(["a", "b", "", "c"])"},
      {R"({"$split": ["abc", "x"]})", "{}", R"(["abc"])"},
      {R"({"$split": [",a,", ","]})", "{}", R"(["", "a", ""])"},
      {R"({"$split": ["", ","]})", "{}", R"([""])"},
      {R"({"$split": [null, ","]})", "{}", "null"},
      {R"({"$split": ["a", "$nope"]})", "{}", "null"},
      {R"({"$split": [1, ","]})", "{}", "error:40085"},
      {R"({"$split": ["a", 1]})", "{}", "error:40086"},
      {R"({"$split": ["a", ""]})", "{}", "error:40087"},
  });
}

TEST(StrLenTest, DocumentedExamples) {
  RunCases({
      {R"({"$strLenBytes": "$name"})", R"({"name": "apple"})", "5"},
      {R"({"$strLenBytes": "$name"})", R"({"name": "Îñtërnâtiônàlizætiøn"})", "28"},  // 20 code points, 8 of them 2 bytes
      {R"({"$strLenBytes": "$name"})", R"({"name": "寿司"})", "6"},
      {R"({"$strLenCP": "$name"})", R"({"name": "Îñtërnâtiônàlizætiøn"})", "20"},
      {R"({"$strLenCP": "$name"})", R"({"name": "寿司"})", "2"},
      {R"({"$strLenCP": ""})", "{}", "0"},
      {R"({"$strLenCP": null})", "{}", "error:34471"},
      {R"({"$strLenBytes": "$nope"})", "{}", "error:34473"},
  });
}

TEST(IndexOfTest, DocumentedExamples) {
  const char* bytes = R"({"$indexOfBytes": ["$item", "foo"]})";
  RunCases({
      {bytes, R"({"item": "foo"})", "0"},
      {bytes, R"({"item": "food"})", "0"},
      {bytes, R"({"item": "fool"})", "0"},
      {bytes, R"({"item": "vanilla"})", "-1"},
      {bytes, R"({"item": ""})", "-1"},
      {bytes, R"({"item": null})", "null"},
      {bytes, "{}", "null"},
      {R"({"$indexOfBytes": ["cafétéria", "é"]})", "{}", "3"},
      {R"({"$indexOfBytes": ["cafétéria", "t"]})", "{}", "5"},
      {R"({"$indexOfCP": ["cafétéria", "é"]})", "{}", "3"},
      {R"({"$indexOfCP": ["cafétéria", "t"]})", "{}", "4"},
      {R"({"$indexOfCP": ["寿司sushi", "s"]})", "{}", "2"},
      {R"({"$indexOfBytes": ["cafeteria", "e", 5]})", "{}", "5"},
      {R"({"$indexOfBytes": ["cafeteria", "e", 6]})", "{}", "-1"},
      {R"({"$indexOfBytes": ["cafeteria", "e", 0, 3]})", "{}", "-1"},
      {R"({"$indexOfBytes": ["cafeteria", "e", 0, 4]})", "{}", "3"},
      {R"({"$indexOfCP": ["abcb", "b", 2]})", "{}", "3"},
      {R"({"$indexOfCP": ["abc", "", 1]})", "{}", "1"},
      {R"({"$indexOfCP": ["abc", "c", 5]})", "{}", "-1"},
      {R"({"$indexOfBytes": [1, "a"]})", "{}", "error:40091"},
      {R"({"$indexOfBytes": ["a", null]})", "{}", "error:40092"},
      {R"({"$indexOfCP": [1, "a"]})", "{}", "error:40093"},
      {R"({"$indexOfCP": ["a", 1]})", "{}", "error:40094"},
      {R"({"$indexOfCP": ["a", "a", 1.5]})", "{}", "error:40096"},
      {R"({"$indexOfCP": ["a", "a", -1]})", "{}", "error:40097"},
      {R"({"$indexOfBytes": ["a", "a", 0, -2]})", "{}", "error:40097"},
  });
}

TEST(TrimTest, DocumentedExamplesAndChars) {
  RunCases({
      {R"({"$trim": {"input": "$description"}})", R"({"description": " \n good  "})", R"("good")"},
      {R"({"$trim": {"input": "$description"}})", R"({"description": "   product 1"})", R"("product 1")"},
      {R"({"$ltrim": {"input": "$description"}})", R"({"description": " \n good  "})", R"("good  ")"},
      {R"({"$rtrim": {"input": "$description"}})", R"({"description": " \n good  "})", R"(" \n good")"},
      {R"({"$trim": {"input": "ggggoodbyeeeee", "chars": "ge"}})", "{}", R"("oodby")"},
      {R"({"$ltrim": {"input": "ggggoodbyeeeee", "chars": "ge"}})", "{}", R"("oodbyeeeee")"},
      {R"({"$rtrim": {"input": "ggggoodbyeeeee", "chars": "ge"}})", "{}", R"("ggggoodby")"},
      // Unicode white space (no-break space, em space) is trimmed by default.
      {R"({"$trim": {"input": "\u00a0hi\u2003"}})", "{}", R"("hi")"},
      {R"({"$trim": {"input": "寿司寿", "chars": "寿"}})", "{}", R"("司")"},
      {R"({"$trim": {"input": "   "}})", "{}", R"("")"},
      {R"({"$trim": {"input": null}})", "{}", "null"},
      {R"({"$trim": {"input": "x", "chars": null}})", "{}", "null"},
      {R"({"$trim": "x"})", "{}", "error:50696"},
      {R"({"$trim": {"input": "x", "other": 1}})", "{}", "error:50694"},
      {R"({"$trim": {"chars": "x"}})", "{}", "error:50695"},
      {R"({"$trim": {"input": 1}})", "{}", "error:50699"},
      {R"({"$trim": {"input": "x", "chars": 1}})", "{}", "error:50700"},
  });
}

TEST(ReplaceTest, DocumentedExamples) {
  const char* one = R"({"$replaceOne": {"input": "$item", "find": "blue paint", "replacement": "red paint"}})";
  const char* all = R"({"$replaceAll": {"input": "$item", "find": "blue paint", "replacement": "red paint"}})";
  RunCases({
      {one, R"({"item": "blue paint"})", R"("red paint")"},
      {one, R"({"item": "blue paint with blue paintbrush"})", R"("red paint with blue paintbrush")"},
      {one, R"({"item": "blue paint with green paintbrush"})", R"("red paint with green paintbrush")"},
      {one, R"({"item": "BLUE PAINT"})", R"("BLUE PAINT")"},
      {all, R"({"item": "blue paint with blue paintbrush"})", R"("red paint with red paintbrush")"},
      {all, R"({"item": "blue paint"})", R"("red paint")"},
      {one, R"({"item": null})", "null"},
      {one, "{}", "null"},
      {R"({"$replaceAll": {"input": "aaa", "find": "aa", "replacement": "b"}})", "{}", R"("ba")"},
      {R"({"$replaceAll": {"input": "ab", "find": "", "replacement": "-"}})", "{}", R"("-a-b-")"},
      {R"({"$replaceOne": {"input": "ab", "find": "", "replacement": "-"}})", "{}", R"("-ab")"},
      {R"({"$replaceOne": {"input": 1, "find": "a", "replacement": "b"}})", "{}", "error:51746"},
      {R"({"$replaceOne": {"input": 1, "find": null, "replacement": "b"}})", "{}", "error:51746"},
      {R"({"$replaceOne": {"input": "a", "find": 1, "replacement": "b"}})", "{}", "error:51745"},
      {R"({"$replaceOne": {"input": "a", "find": "a", "replacement": 1}})", "{}", "error:51744"},
      {R"({"$replaceOne": {"find": "a", "replacement": "b"}})", "{}", "error:51749"},
      {R"({"$replaceOne": {"input": "a", "replacement": "b"}})", "{}", "error:51748"},
      {R"({"$replaceOne": {"input": "a", "find": "a"}})", "{}", "error:51747"},
      {R"({"$replaceOne": {"input": "a", "find": "a", "replacement": "b", "x": 1}})", "{}", "error:51750"},
      {R"({"$replaceAll": "a"})", "{}", "error:51751"},
  });
}

TEST(RegexTest, RegexMatchDocumentedExamples) {
  const char* plain = R"({"$regexMatch": {"input": "$description", "regex": "line"}})";
  const char* icase = R"({"$regexMatch": {"input": "$description", "regex": "line", "options": "i"}})";
  RunCases({
      {plain, R"({"description": "Single LINE description."})", "false"},
      {plain, R"({"description": "First lines\nsecond line"})", "true"},
      {icase, R"({"description": "Single LINE description."})", "true"},
      {R"({"$regexMatch": {"input": "$d", "regex": {"$regularExpression": {"pattern": "line", "options": "i"}}}})",
       R"({"d": "LINE"})", "true"},
      {R"({"$regexMatch": {"input": "$d", "regex": "^line$", "options": "m"}})", R"({"d": "a\nline\nb"})", "true"},
      {R"({"$regexMatch": {"input": "$d", "regex": "^line$"}})", R"({"d": "a\nline\nb"})", "false"},
      {plain, R"({"description": null})", "false"},
      {plain, "{}", "false"},
      {R"({"$regexMatch": {"input": "x", "regex": null}})", "{}", "false"},
      {R"({"$regexMatch": {"input": "x", "regex": "$r"}})", R"({"r": "^x"})", "true"},
  });
}

TEST(RegexTest, RegexFindDocumentedExamples) {
  const char* find = R"({"$regexFind": {"input": "$description", "regex": "line"}})";
  RunCases({
      {find, R"({"description": "Single LINE description."})", "null"},
      {find, R"({"description": "First lines\nsecond line"})", R"({"match": "line", "idx": 6, "captures": []})"},
      {find, R"({"description": "Many spaces before     line"})", R"({"match": "line", "idx": 23, "captures": []})"},
      {R"x({"$regexFind": {"input": "abc123def", "regex": "([a-z]+)(\\d+)"}})x", "{}",
       R"({"match": "abc123", "idx": 0, "captures": ["abc", "123"]})"},
      // A group that takes no part in the match captures null.
      {R"x({"$regexFind": {"input": "abc", "regex": "(x)?abc"}})x", "{}",
       R"({"match": "abc", "idx": 0, "captures": [null]})"},
      // idx counts code points.
      {R"({"$regexFind": {"input": "寿司sushi", "regex": "sushi"}})", "{}",
       R"({"match": "sushi", "idx": 2, "captures": []})"},
      {find, "{}", "null"},
  });
}

TEST(RegexTest, RegexFindAllDocumentedExamples) {
  RunCases({
      {R"({"$regexFindAll": {"input": "$description", "regex": "line", "options": "i"}})",
       R"({"description": "Single LINE description."})", R"([{"match": "LINE", "idx": 7, "captures": []}])"},
      {R"({"$regexFindAll": {"input": "$description", "regex": "line"}})",
       R"({"description": "First lines\nsecond line"})",
       R"([{"match": "line", "idx": 6, "captures": []}, {"match": "line", "idx": 19, "captures": []}])"},
      {R"x({"$regexFindAll": {"input": "a1b22", "regex": "(\\d+)"}})x", "{}",
       R"([{"match": "1", "idx": 1, "captures": ["1"]}, {"match": "22", "idx": 3, "captures": ["22"]}])"},
      // Empty matches advance one character at a time.
      {R"({"$regexFindAll": {"input": "ab", "regex": ""}})", "{}",
       R"([{"match": "", "idx": 0, "captures": []}, {"match": "", "idx": 1, "captures": []},
           {"match": "", "idx": 2, "captures": []}])"},
      {R"({"$regexFindAll": {"input": "xyz", "regex": "a"}})", "{}", "[]"},
      // PCRE2 in UTF mode: "." is one character.
      {R"({"$regexFindAll": {"input": "é寿", "regex": "."}})", "{}",
       R"([{"match": "é", "idx": 0, "captures": []}, {"match": "寿", "idx": 1, "captures": []}])"},
      {R"x({"$regexFind": {"input": "xé", "regex": "x(.)"}})x", "{}", R"({"match": "xé", "idx": 0, "captures": ["é"]})"},
      {R"({"$regexFindAll": {"input": null, "regex": "a"}})", "{}", "[]"},
      // An anchor matches only at the start, even after the first match.
      {R"({"$regexFindAll": {"input": "aaa", "regex": "^a"}})", "{}", R"([{"match": "a", "idx": 0, "captures": []}])"},
  });
}

TEST(RegexTest, Errors) {
  RunCases({
      {R"({"$regexMatch": "x"})", "{}", "error:51103"},
      {R"({"$regexMatch": {"input": "x", "regex": "x", "y": 1}})", "{}", "error:31024"},
      {R"({"$regexMatch": {"regex": "x"}})", "{}", "error:31022"},
      {R"({"$regexMatch": {"input": "x"}})", "{}", "error:31023"},
      {R"({"$regexMatch": {"input": 1, "regex": "x"}})", "{}", "error:51104"},
      {R"({"$regexMatch": {"input": "x", "regex": 1}})", "{}", "error:51105"},
      {R"({"$regexMatch": {"input": "x", "regex": "x", "options": 1}})", "{}", "error:51106"},
      {R"({"$regexMatch": {"input": "x", "regex": {"$regularExpression": {"pattern": "x", "options": "i"}},
                            "options": "m"}})", "{}", "error:51107"},
      {R"({"$regexMatch": {"input": "x", "regex": "x", "options": "z"}})", "{}", "error:51108"},
      {R"({"$regexFind": {"input": "x", "regex": "("}})", "{}", "error:51111"},
      // A regex from a field is compiled per evaluation, with the same errors.
      {R"({"$regexFind": {"input": "x", "regex": "$r"}})", R"({"r": "("})", "error:51111"},
  });
}

}  // namespace
}  // namespace test
}  // namespace expression
}  // namespace gatedb
