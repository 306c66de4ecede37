// The reference side of `make conformance`: runs the released @mastra/evals 1.10.2 scorers
// and promptfoo 0.123.1's factuality on the cases the Python side generated.
//
// Usage: node runner.mjs <cases.jsonl> <results.jsonl> <judge base url> [concurrency]
// Each input line is {"id", "scorer", ...arguments}; each output line is
// {"id", "score", "pass"?, "error"?, "details"?}. The first output line is
// {"meta": ...}: data the Python side needs to check its explanations (the stopword list
// keyword-extractor uses, the sentiment package's lexicon and negators).
// LLM scorers call the scripted judge at the given base URL; the case id travels in a
// header so the judge answers with that case's verdicts.

import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

import {
  createAnswerRelevancyScorer,
  createAnswerSimilarityScorer,
  createBiasScorer,
  createCompletenessScorer,
  createContentSimilarityScorer,
  createContextPrecisionScorer,
  createContextRecallScorer,
  createContextRelevanceScorerLLM,
  createFaithfulnessScorer,
  createHallucinationScorer,
  createKeywordCoverageScorer,
  createMultiTurnJudgeScorer,
  createRubricScorer,
  createToolCallAccuracyScorerLLM,
  createTrajectoryAccuracyScorerLLM,
  createTrajectoryScorerCode,
  createNoiseSensitivityScorerLLM,
  createPromptAlignmentScorerLLM,
  createSummarizationScorer,
  createTextualDifferenceScorer,
  createToneScorer,
  createToolCallAccuracyScorerCode,
  createTrajectoryAccuracyScorerCode,
  createToxicityScorer,
} from "@mastra/evals/scorers/prebuilt";
import { createAgentTestRun, createTestMessage } from "@mastra/evals/scorers/utils";
import { assertions } from "promptfoo";

const require = createRequire(import.meta.url);

const [casesPath, resultsPath, baseUrl, concurrencyArg] = process.argv.slice(2);
const concurrency = Number(concurrencyArg || 16);

function model(id) {
  return {
    id: "openai/gpt-4o-mini", // a known model: Mastra asks for strict structured output
    url: `${baseUrl}/v1`,
    apiKey: "conformance",
    headers: { "x-conformance-case": id, "x-conformance-side": "mastra" },
  };
}

function agentRun(input, output, toolNames = [], systemPrompt = undefined) {
  const toolInvocations = toolNames.map((toolName, i) => ({
    toolCallId: `call-${i}`,
    toolName,
    args: { q: i },
    result: `result ${i}`,
    state: "result",
  }));
  return createAgentTestRun({
    ...(systemPrompt ? { systemMessages: [{ role: "system", content: systemPrompt }] } : {}),
    inputMessages: [createTestMessage({ content: input, role: "user", id: "u" })],
    output: [createTestMessage({ content: output, role: "assistant", id: "a", toolInvocations })],
  });
}

function number(value) {
  if (typeof value !== "number") return value ?? null;
  return Number.isFinite(value) ? value : String(value);
}

function plain(value) {
  if (value instanceof Set) return [...value];
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  }
  return number(value);
}

const LLM = {
  faithfulness: (c) => createFaithfulnessScorer({ model: model(c.id), options: c.options }),
  hallucination: (c) => createHallucinationScorer({ model: model(c.id), options: c.options }),
  context_relevance: (c) =>
    createContextRelevanceScorerLLM({
      model: model(c.id),
      options: c.no_context ? { ...c.options, contextExtractor: () => [] } : c.options,
    }),
  context_precision: (c) => createContextPrecisionScorer({ model: model(c.id), options: c.options }),
  answer_relevancy: (c) =>
    c.options === null
      ? createAnswerRelevancyScorer({ model: model(c.id) })
      : createAnswerRelevancyScorer({ model: model(c.id), options: c.options }),
  bias: (c) => createBiasScorer({ model: model(c.id), options: c.options }),
  toxicity: (c) => createToxicityScorer({ model: model(c.id), options: c.options }),
  // scoring.kinds_rag's kinds (conformance/kinds_rag.py makes their cases)
  answer_similarity: (c) =>
    createAnswerSimilarityScorer({ model: model(c.id), options: c.options ?? undefined }),
  context_recall: (c) => createContextRecallScorer({ model: model(c.id), options: c.options }),
  noise_sensitivity: (c) => createNoiseSensitivityScorerLLM({ model: model(c.id), options: c.options }),
  prompt_alignment: (c) => createPromptAlignmentScorerLLM({ model: model(c.id), options: c.options }),
  summarization: (c) => createSummarizationScorer({ model: model(c.id), options: c.options }),
};

const CODE = {
  content_similarity: (c) => createContentSimilarityScorer(c.options),
  textual_difference: () => createTextualDifferenceScorer(),
  keyword_coverage: () => createKeywordCoverageScorer(),
  completeness: () => createCompletenessScorer(),
  tone_consistency: (c) => createToneScorer(c.options),
  tool_call_accuracy: (c) => createToolCallAccuracyScorerCode(c.options),
  trajectory_accuracy: (c) =>
    createTrajectoryAccuracyScorerCode({
      expectedTrajectory: c.expected,
      comparisonOptions: c.options,
    }),
};

// The agent kinds (conformance/kinds_agent.py makes their cases): each builds the run
// its scorer reads (tool invocations, the assistant's turns, a trajectory).
const AGENT = {
  rubric: async (c) => {
    const scorer = createRubricScorer({ model: model(c.id), criteria: c.criteria, options: c.options });
    const run = agentRun(c.input, c.output);
    return scorer.run({ input: run.input, output: run.output });
  },
  multi_turn_judge: async (c) => {
    const scorer = createMultiTurnJudgeScorer({ model: model(c.id), criterion: c.criterion, options: c.options });
    const output = c.turns.map((content, i) => createTestMessage({ content, role: "assistant", id: `a${i}` }));
    return scorer.run({ input: agentRun("", "").input, output });
  },
  tool_call_accuracy_llm: async (c) => {
    const scorer = createToolCallAccuracyScorerLLM({ model: model(c.id), availableTools: c.available_tools });
    const run = agentRun(c.input, c.output, c.tool_calls);
    return scorer.run({ input: run.input, output: run.output });
  },
  trajectory_accuracy_llm: async (c) => {
    const scorer = createTrajectoryAccuracyScorerLLM({
      model: model(c.id),
      ...(c.expected ? { expectedTrajectory: { steps: c.expected } } : {}),
    });
    const run = agentRun(c.input, c.output);
    return scorer.run({ input: run.input, output: { steps: c.steps, rawOutput: run.output } });
  },
  trajectory: async (c) => {
    const scorer = createTrajectoryScorerCode(c.options);
    const run = agentRun(c.input, c.output);
    return scorer.run({ input: run.input, output: { steps: c.steps } });
  },
};

async function factuality(c) {
  const grading = {
    provider: {
      id: "openai:chat:conformance-judge",
      config: {
        apiBaseUrl: `${baseUrl}/v1`,
        apiKey: "conformance",
        headers: { "x-conformance-case": c.id, "x-conformance-side": "promptfoo" },
      },
    },
    factuality: c.options,
  };
  const result = await assertions.matchesFactuality(c.input, c.reference, c.output, grading);
  return { score: number(result.score), pass: result.pass, details: { reason: result.reason } };
}

async function runOne(c) {
  if (c.scorer === "factuality") return factuality(c);
  if (AGENT[c.scorer]) {
    const result = await AGENT[c.scorer](c);
    return { score: number(result.score) };
  }
  if (LLM[c.scorer]) {
    const scorer = LLM[c.scorer](c);
    const run = agentRun(c.input, c.output, [], c.system_prompt);
    const groundTruth = "ground_truth" in c ? { groundTruth: c.ground_truth } : {};
    const result = await scorer.run({ input: run.input, output: run.output, ...groundTruth });
    return { score: number(result.score) };
  }
  const scorer = CODE[c.scorer](c);
  const run = agentRun(c.input, c.output, c.tool_calls);
  // A trajectory scorer's output is the trajectory itself (runEvals extracts it).
  const output = c.steps ? { steps: c.steps } : run.output;
  const result = await scorer.run({ input: run.input, output });
  return {
    score: number(result.score),
    details: plain({ preprocess: result.preprocessStepResult, analyze: result.analyzeStepResult }),
  };
}

function meta() {
  const keywordExtractor = require("keyword-extractor");
  const sentimentDir = require.resolve("sentiment/package.json").replace(/package\.json$/, "");
  return {
    keyword_stopwords: keywordExtractor.getStopwords({ language: "english" }),
    sentiment_labels: {
      ...JSON.parse(readFileSync(`${sentimentDir}languages/en/labels.json`, "utf8")),
      ...JSON.parse(readFileSync(`${sentimentDir}build/emoji.json`, "utf8")),
    },
    sentiment_negators: Object.keys(
      JSON.parse(readFileSync(`${sentimentDir}languages/en/negators.json`, "utf8")),
    ),
    versions: {
      ...Object.fromEntries(
        ["@mastra/evals", "@mastra/core", "promptfoo", "zod"].map((name) => [
          name,
          JSON.parse(readFileSync(new URL(`node_modules/${name}/package.json`, import.meta.url), "utf8"))
            .version,
        ]),
      ),
      node: process.version,
    },
  };
}

// Results go to a file, not stdout: the packages may log there.
writeFileSync(resultsPath, "");
function emit(line) {
  appendFileSync(resultsPath, `${JSON.stringify(line)}\n`);
}

const cases = readFileSync(casesPath, "utf8")
  .split("\n")
  .filter((line) => line.trim())
  .map((line) => JSON.parse(line));

emit({ meta: meta() });

let next = 0;
async function worker() {
  while (next < cases.length) {
    const c = cases[next++];
    try {
      emit({ id: c.id, ...(await runOne(c)) });
    } catch (error) {
      emit({ id: c.id, score: null, error: String(error?.message ?? error).slice(0, 500) });
    }
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
