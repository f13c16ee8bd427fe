//! The worker that owns a llama.cpp context and generates turns, one at a time.
//!
//! A llama.cpp context is not `Send`, and one context serves every step of a run so that its KV
//! cache can keep the prompt prefix the steps share; so each [`LocalModel`](super::LocalModel)
//! has one worker thread that owns its context and takes [`Job`]s from a channel. Models are
//! loaded once per process and path and live as long as it does (they are large and read-only;
//! contexts borrow them).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use serde_json::json;
use tokio::sync::mpsc::UnboundedSender;
use toolsmith_core::{
    FinishReason, InputTokens, ModelError, ModelErrorKind, ModelPart, OutputTokens,
    ProviderMetadata, UnifiedFinishReason, Usage,
};

use super::answer;
use super::forced::Skeleton;
use super::prompt_cache::{self, PromptCache};
use super::turn::TurnParser;

/// One turn to generate.
pub(crate) struct Job {
    pub prompt: String,
    /// How many bytes at the start of `prompt` every request with these tools shares.
    pub shared_len: usize,
    pub parse_special: bool,
    pub grammar: String,
    /// What the turn's lines must begin with, for jump-forward decoding.
    pub skeleton: Skeleton,
    pub sampling: Sampling,
    pub max_tokens: u32,
    /// The sentences after which an answer ends, if limited ([`answer::sentences_ended`]).
    pub sentence_limit: Option<u32>,
    pub model_id: String,
    pub out: UnboundedSender<Result<ModelPart, ModelError>>,
}

/// Sampling settings from the request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sampling {
    /// `None` or 0: greedy.
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub top_k: Option<u32>,
    pub seed: u32,
}

/// Context settings of a worker.
#[derive(Debug, Clone)]
pub(crate) struct EngineConfig {
    pub path: PathBuf,
    pub threads: i32,
    pub context_tokens: u32,
    /// Where the evaluated shared start of prompts is kept across processes, if anywhere.
    pub prompt_cache: Option<PathBuf>,
}

/// The process's llama.cpp backend, initialised once, its logging silenced (llama.cpp prints
/// every tensor it loads to stderr otherwise).
fn backend() -> Result<&'static LlamaBackend, ModelError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let mut backend = LlamaBackend::init().map_err(|e| e.to_string())?;
            backend.void_logs();
            Ok(backend)
        })
        .as_ref()
        .map_err(|e| other(format!("llama.cpp could not be initialised: {e}")))
}

/// Loads the model at `path`, once per process.
fn load(path: &Path) -> Result<&'static LlamaModel, ModelError> {
    static MODELS: OnceLock<Mutex<HashMap<PathBuf, &'static LlamaModel>>> = OnceLock::new();
    let mut models = MODELS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(model) = models.get(path) {
        return Ok(model);
    }
    let model = LlamaModel::load_from_file(backend()?, path, &LlamaModelParams::default())
        .map_err(|e| {
            ModelError::new(
                ModelErrorKind::Config,
                format!(
                    "The local model {} could not be loaded ({e}); is it a GGUF file?",
                    path.display()
                ),
            )
        })?;
    // Leaked on purpose: contexts borrow the model for as long as they live, and a process
    // loads each path once.
    let model: &'static LlamaModel = Box::leak(Box::new(model));
    models.insert(path.to_path_buf(), model);
    Ok(model)
}

/// Starts a worker thread for `config`; jobs sent before the model has loaded wait for it.
pub(crate) fn spawn(config: EngineConfig) -> mpsc::Sender<Job> {
    let (jobs, inbox) = mpsc::channel::<Job>();
    let spawned = std::thread::Builder::new()
        .name("toolsmith-local-model".into())
        .spawn(move || {
            let mut engine = match Engine::new(&config) {
                Ok(engine) => engine,
                Err(err) => {
                    // Every job gets the load error, for as long as the model is in use.
                    for job in inbox {
                        let _ = job.out.send(Err(err.clone()));
                    }
                    return;
                }
            };
            for job in inbox {
                let out = job.out.clone();
                if let Err(err) = engine.run(job) {
                    let _ = out.send(Err(err));
                }
            }
        });
    if let Err(err) = spawned {
        tracing::error!("could not start the local model's thread: {err}");
    }
    jobs
}

/// Tokens llama.cpp evaluates per pass when it evaluates a prompt (its default is 512). Passes
/// of 256 evaluated the 797-token prompt 5 to 10 % faster on the CPUs measured, 128 and 64
/// no faster or slower (docs/benchmarks.md, "The embedded local model").
const UBATCH_TOKENS: u32 = 256;

struct Engine {
    model: &'static LlamaModel,
    ctx: LlamaContext<'static>,
    /// The tokens whose keys and values are in the cache, from position 0.
    cached: Vec<LlamaToken>,
    batch_size: usize,
    prompt_cache: Option<PromptCache>,
    /// What the prompt cache did for the current turn.
    cache_use: CacheUse,
}

/// What the prompt cache did for a turn, reported in its finish metadata.
#[derive(Debug, Clone, Copy)]
struct CacheUse {
    /// `"restored"`, `"saved"`, or `"unused"` (no cache, a short shared start, or the shared
    /// start already in memory).
    outcome: &'static str,
    /// Time spent reading or writing the file, in milliseconds.
    ms: f64,
}

impl CacheUse {
    const UNUSED: CacheUse = CacheUse {
        outcome: "unused",
        ms: 0.0,
    };
}

impl Engine {
    fn new(config: &EngineConfig) -> Result<Self, ModelError> {
        let model = load(&config.path)?;
        let batch_size = 512;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(config.context_tokens))
            .with_n_batch(batch_size)
            .with_n_ubatch(UBATCH_TOKENS)
            .with_n_threads(config.threads)
            .with_n_threads_batch(config.threads);
        // llama.cpp may adjust the model while making a context: one at a time.
        static CREATING: Mutex<()> = Mutex::new(());
        let guard = CREATING.lock().unwrap_or_else(|p| p.into_inner());
        let ctx = model.new_context(backend()?, params).map_err(|e| {
            other(format!(
                "The local model's context could not be created: {e}"
            ))
        })?;
        drop(guard);
        // Everything besides the model and the program that shapes the saved state.
        let settings = format!(
            "n_ctx={} n_batch={batch_size} n_ubatch={UBATCH_TOKENS} flash_attn=auto",
            config.context_tokens
        );
        let prompt_cache = config
            .prompt_cache
            .clone()
            .and_then(|dir| PromptCache::new(dir, &config.path, &settings));
        Ok(Engine {
            model,
            ctx,
            cached: Vec::new(),
            batch_size: batch_size as usize,
            prompt_cache,
            cache_use: CacheUse::UNUSED,
        })
    }

    /// Generates one turn, sending its parts as they are made.
    fn run(&mut self, job: Job) -> Result<(), ModelError> {
        let started = Instant::now();
        let vocab = self.model.vocab();
        let tokens = vocab.tokenize(job.prompt.as_bytes(), true, job.parse_special);
        let limit = self.ctx.n_ctx() as usize;
        if tokens.len() + job.max_tokens as usize > limit {
            return Err(ModelError::new(
                ModelErrorKind::InvalidRequest,
                format!(
                    "The prompt is {} tokens and the turn may take {} more, but the local \
                     model's context holds {limit}. Shorten the conversation or lower \
                     maxOutputTokens.",
                    tokens.len(),
                    job.max_tokens
                ),
            ));
        }
        let shared = shared_tokens(
            &vocab.tokenize(
                &job.prompt.as_bytes()[..job.shared_len],
                true,
                job.parse_special,
            ),
            &tokens,
        );
        let reused = self.evaluate_prompt(&tokens, shared)?;
        let prompt_done = Instant::now();
        let _ = job.out.send(Ok(ModelPart::ResponseMetadata {
            id: None,
            model_id: Some(job.model_id.clone()),
        }));

        let mut grammar = LlamaSampler::grammar(self.model, &job.grammar, "root")
            .map_err(|e| other(format!("The local model's turn grammar is invalid: {e}")))?;
        let mut chooser = Chooser::new(job.sampling);
        let mut parser = TurnParser::new();
        let mut pending = Vec::<u8>::new();
        let mut generated = 0u32;
        let mut slow_tokens = 0u32;
        let mut forced_tokens = 0u32;
        // The turn's current line, for the skeleton.
        let mut line = String::new();
        // The tokens of the answer's text so far, for the repeat ban, and the text, for the
        // sentence limit.
        let mut answer_tokens: Vec<LlamaToken> = Vec::new();
        let mut answer_text = String::new();
        let mut finish = UnifiedFinishReason::Stop;
        loop {
            if generated >= job.max_tokens {
                finish = UnifiedFinishReason::Length;
                break;
            }
            if job.out.is_closed() {
                return Ok(()); // the caller went away: cancelled
            }
            let mut logits = self.ctx.get_logits_ith(-1);
            // In an answer, a token that would repeat an n-gram of the answer is not allowed: a
            // small model decoding greedily otherwise loops on one sentence to the token limit.
            let banned_logits;
            if parser.in_answer() {
                let banned = repeats(&answer_tokens, NO_REPEAT_NGRAM);
                if !banned.is_empty() {
                    let mut copy = logits.to_vec();
                    for token in banned {
                        if let Some(logit) = copy.get_mut(token.0 as usize) {
                            *logit = f32::NEG_INFINITY;
                        }
                    }
                    banned_logits = copy;
                    logits = &banned_logits;
                }
            }
            // Fast path: the model's own choice, if the grammar allows it.
            let wanted = chooser.choose_unconstrained(logits);
            // An answer that has said enough ends here, before the space after its last
            // sentence (the parser closes it).
            if let Some(limit) = job.sentence_limit
                && parser.in_answer()
                && !answer_text.is_empty()
            {
                let next = String::from_utf8_lossy(&vocab.token_to_piece(wanted, false, None))
                    .into_owned();
                if answer::sentences_ended(&answer_text, &next) >= limit {
                    break;
                }
            }
            let token = if accepts(&mut grammar, wanted) {
                wanted
            } else if parser.is_complete() {
                // The turn is whole and the model wants to write something the grammar does not
                // allow (the next `User:` line): the turn ends here. (Not "if the grammar
                // accepts end of text": a newline taken as the separator before another call
                // leaves it expecting that call.)
                break;
            } else {
                slow_tokens += 1;
                chooser.choose_constrained(logits, &mut grammar)
            };
            if vocab.is_eog(token) {
                break;
            }
            grammar.accept(token);
            generated += 1;
            if parser.in_answer() {
                answer_tokens.push(token);
            }
            let mut batch = vec![token];
            pending.extend(vocab.token_to_piece(token, false, None));
            let mut text = take_utf8(&mut pending);
            track_line(&mut line, &text);
            // Jump forward over what the turn cannot avoid: evaluated with this token, in one
            // batch (about the cost of this token alone).
            if let Some(forced) = job.skeleton.forced(&line) {
                let budget = job.max_tokens - generated;
                let more = self.forced_tokens(forced, &mut grammar, budget as usize);
                for &token in &more {
                    pending.extend(vocab.token_to_piece(token, false, None));
                }
                let more_text = take_utf8(&mut pending);
                track_line(&mut line, &more_text);
                text.push_str(&more_text);
                generated += more.len() as u32;
                forced_tokens += more.len() as u32;
                batch.extend(more);
            }
            if !text.is_empty() {
                for part in parser.push(&text)? {
                    if let ModelPart::TextDelta { delta, .. } = &part {
                        answer_text.push_str(delta);
                    }
                    let _ = job.out.send(Ok(part));
                }
            }
            self.decode(&batch, self.cached.len())?;
        }
        for part in parser.finish() {
            let _ = job.out.send(Ok(part));
        }
        if parser.calls() > 0 && finish == UnifiedFinishReason::Stop {
            finish = UnifiedFinishReason::ToolCalls;
        }
        let done = Instant::now();
        let metadata = json!({
            "local": {
                "promptTokens": tokens.len(),
                "reusedTokens": reused,
                "sharedTokens": shared,
                "promptCache": self.cache_use.outcome,
                "promptCacheMs": self.cache_use.ms,
                "promptMs": millis(prompt_done - started),
                "generatedTokens": generated,
                "generateMs": millis(done - prompt_done),
                "grammarFallbackTokens": slow_tokens,
                "forcedTokens": forced_tokens,
            }
        });
        let _ = job.out.send(Ok(ModelPart::Finish {
            usage: Usage {
                input: InputTokens {
                    total: Some(tokens.len() as u64),
                    no_cache: Some((tokens.len() - reused) as u64),
                    cache_read: Some(reused as u64),
                    cache_write: None,
                },
                output: OutputTokens {
                    total: Some(u64::from(generated)),
                    text: Some(u64::from(generated)),
                    reasoning: None,
                },
                server_tool_uses: 0,
            },
            finish_reason: FinishReason::new(finish),
            provider_metadata: ProviderMetadata(metadata.as_object().cloned().unwrap_or_default()),
        }));
        Ok(())
    }

    /// The tokens of `forced` text the grammar accepts, in order, at most `budget` of them,
    /// each accepted into the grammar; none when the text does not tokenise back to itself
    /// (then it is no use as the model's own continuation).
    fn forced_tokens(
        &self,
        forced: &str,
        grammar: &mut LlamaSampler,
        budget: usize,
    ) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        let mut tokens = vocab.tokenize(forced.as_bytes(), false, false);
        let pieces: Vec<u8> = tokens
            .iter()
            .flat_map(|&t| vocab.token_to_piece(t, false, None))
            .collect();
        if pieces != forced.as_bytes() {
            return Vec::new();
        }
        tokens.truncate(budget);
        let allowed = tokens
            .iter()
            .take_while(|&&token| {
                let ok = accepts(grammar, token);
                if ok {
                    grammar.accept(token);
                }
                ok
            })
            .count();
        tokens.truncate(allowed);
        tokens
    }

    /// Brings the cache to `tokens`, reusing the longest cached prefix, or else the prompt
    /// cache's state for the first `shared` tokens; returns how many tokens were not evaluated.
    /// At least the last token is evaluated, for its logits.
    ///
    /// The first `shared` tokens are always evaluated as batches of their own, so that their
    /// state is the same whether it was restored or evaluated (batch shapes can change the
    /// arithmetic, and with it a greedy choice).
    fn evaluate_prompt(
        &mut self,
        tokens: &[LlamaToken],
        shared: usize,
    ) -> Result<usize, ModelError> {
        let common = self
            .cached
            .iter()
            .zip(tokens)
            .take_while(|(a, b)| a == b)
            .count()
            .min(tokens.len().saturating_sub(1));
        let removed = self
            .ctx
            .clear_kv_cache_seq(Some(0), Some(common as u32), None)
            .unwrap_or(false);
        let common = if removed {
            common
        } else {
            self.ctx.clear_kv_cache();
            0
        };
        self.cached.truncate(common);
        let shared = shared.min(tokens.len().saturating_sub(1));
        let mut reused = common;
        self.cache_use = CacheUse::UNUSED;
        if common < shared
            && shared >= prompt_cache::MIN_TOKENS
            && let Some(cache) = self.prompt_cache.take()
        {
            let mut evaluated = Ok(());
            let started = Instant::now();
            if cache.restore(&mut self.ctx, &tokens[..shared]) {
                self.cached = tokens[..shared].to_vec();
                reused = shared;
                self.cache_use = CacheUse {
                    outcome: "restored",
                    ms: millis(started.elapsed()),
                };
            } else {
                let looked = millis(started.elapsed());
                // From position 0 even if part of it was cached: the saved state is then what
                // a fresh context evaluates (and `restore` may have cleared the cache).
                self.ctx.clear_kv_cache();
                self.cached.clear();
                evaluated = tokens[..shared]
                    .chunks(self.batch_size)
                    .try_for_each(|chunk| self.decode(chunk, self.cached.len()));
                if evaluated.is_ok() {
                    let saving = Instant::now();
                    cache.save(&self.ctx, &tokens[..shared]);
                    self.cache_use = CacheUse {
                        outcome: "saved",
                        ms: looked + millis(saving.elapsed()),
                    };
                }
            }
            self.prompt_cache = Some(cache);
            evaluated?;
        }
        let start = self.cached.len();
        let (before, after) = tokens.split_at(shared.max(start));
        for chunk in before[start..]
            .chunks(self.batch_size)
            .chain(after.chunks(self.batch_size))
        {
            self.decode(chunk, self.cached.len())?;
        }
        Ok(reused)
    }

    /// Evaluates `tokens` at positions from `start`, logits for the last one only.
    fn decode(&mut self, tokens: &[LlamaToken], start: usize) -> Result<(), ModelError> {
        let mut batch = LlamaBatch::new(tokens.len(), 1);
        for (i, token) in tokens.iter().enumerate() {
            batch
                .add(*token, (start + i) as i32, &[0], i + 1 == tokens.len())
                .map_err(|e| other(format!("local model batch: {e}")))?;
        }
        self.ctx
            .decode(&mut batch)
            .map_err(|e| other(format!("The local model failed to evaluate tokens: {e}")))?;
        self.cached.extend_from_slice(tokens);
        Ok(())
    }
}

/// How many of `tokens` the shared start of the prompt, tokenised alone (`start`), covers: the
/// tokens the two tokenisations agree on (text at the seam can merge into a different token).
fn shared_tokens(start: &[LlamaToken], tokens: &[LlamaToken]) -> usize {
    start.iter().zip(tokens).take_while(|(a, b)| a == b).count()
}

/// Whether the grammar allows `token` next.
fn accepts(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
    grammar.apply(&mut one);
    one.data[0].logit() != f32::NEG_INFINITY
}

/// Picks tokens: greedy (the default, and what the measurements use), or sampled with the
/// request's temperature, top-k, top-p and seed.
struct Chooser {
    sampler: Option<LlamaSampler>,
}

impl Chooser {
    fn new(sampling: Sampling) -> Self {
        let sampler = match sampling.temperature {
            Some(t) if t > 0.0 => {
                let mut chain = Vec::new();
                if let Some(k) = sampling.top_k {
                    chain.push(LlamaSampler::top_k(k as i32));
                }
                if let Some(p) = sampling.top_p {
                    chain.push(LlamaSampler::top_p(p, 1));
                }
                chain.push(LlamaSampler::temp(t));
                chain.push(LlamaSampler::dist(sampling.seed));
                Some(LlamaSampler::chain_simple(chain))
            }
            _ => None,
        };
        Chooser { sampler }
    }

    fn choose_unconstrained(&mut self, logits: &[f32]) -> LlamaToken {
        match &mut self.sampler {
            None => argmax(logits.iter().copied().enumerate()),
            Some(sampler) => {
                let mut all = candidates(logits);
                sampler.apply(&mut all);
                all.selected_token()
                    .unwrap_or_else(|| argmax(logits.iter().copied().enumerate()))
            }
        }
    }

    /// The choice among the tokens the grammar allows.
    ///
    /// The grammar is checked on the [`SHORTLIST`] most likely tokens first (matching a token
    /// against the grammar is the costly part, and Gemma's vocabulary has 262 144 of them);
    /// only if it allows none of those is the whole vocabulary checked. For greedy decoding
    /// this is exact: the most likely allowed token is in the shortlist whenever any allowed
    /// token is. Sampling then draws from the shortlist's allowed tokens, as a top-k of
    /// [`SHORTLIST`] would.
    fn choose_constrained(&mut self, logits: &[f32], grammar: &mut LlamaSampler) -> LlamaToken {
        let mut all = candidates(logits);
        let shortlist_len = SHORTLIST.min(all.data.len());
        if shortlist_len < all.data.len() {
            all.data
                .select_nth_unstable_by(shortlist_len - 1, |a, b| b.logit().total_cmp(&a.logit()));
        }
        let mut short = LlamaTokenDataArray::new(all.data[..shortlist_len].to_vec(), false);
        grammar.apply(&mut short);
        let allowed =
            |array: &LlamaTokenDataArray| array.data.iter().any(|d| d.logit() != f32::NEG_INFINITY);
        let mut pool = if allowed(&short) {
            short
        } else {
            grammar.apply(&mut all);
            all
        };
        match &mut self.sampler {
            None => argmax(pool.data.iter().map(|d| (d.id().0 as usize, d.logit()))),
            Some(sampler) => {
                sampler.apply(&mut pool);
                pool.selected_token().unwrap_or_else(|| {
                    argmax(pool.data.iter().map(|d| (d.id().0 as usize, d.logit())))
                })
            }
        }
    }
}

/// How many of the most likely tokens the grammar is checked on before the whole vocabulary.
const SHORTLIST: usize = 512;

fn candidates(logits: &[f32]) -> LlamaTokenDataArray {
    LlamaTokenDataArray::from_iter(
        logits
            .iter()
            .enumerate()
            .map(|(i, &logit)| LlamaTokenData::new(LlamaToken(i as i32), logit, 0.0)),
        false,
    )
}

fn argmax(scores: impl Iterator<Item = (usize, f32)>) -> LlamaToken {
    let (best, _) = scores.fold((0, f32::NEG_INFINITY), |best, (i, score)| {
        if score > best.1 { (i, score) } else { best }
    });
    LlamaToken(best as i32)
}

/// The length of the token sequences an answer may not repeat.
const NO_REPEAT_NGRAM: usize = 6;

/// The tokens that would complete a second occurrence of an `n`-gram of `tokens`: for every
/// earlier place where the last `n - 1` tokens occur, the token that followed them there.
fn repeats(tokens: &[LlamaToken], n: usize) -> Vec<LlamaToken> {
    if n < 2 || tokens.len() < n {
        return Vec::new();
    }
    let tail = &tokens[tokens.len() - (n - 1)..];
    tokens
        .windows(n)
        .filter(|w| &w[..n - 1] == tail)
        .map(|w| w[n - 1])
        .collect()
}

/// Keeps `line` the text after the last newline of the turn, as `text` is appended.
fn track_line(line: &mut String, text: &str) {
    match text.rfind('\n') {
        Some(at) => {
            line.clear();
            line.push_str(&text[at + 1..]);
        }
        None => line.push_str(text),
    }
}

/// Takes the longest valid UTF-8 prefix out of `pending` (a token may end inside a character).
fn take_utf8(pending: &mut Vec<u8>) -> String {
    let valid = match std::str::from_utf8(pending) {
        Ok(text) => text.len(),
        Err(err) if err.error_len().is_none() => err.valid_up_to(),
        // An invalid sequence (not just an incomplete one): replace it rather than stall.
        Err(_) => {
            let text = String::from_utf8_lossy(pending).into_owned();
            pending.clear();
            return text;
        }
    };
    let rest = pending.split_off(valid);
    String::from_utf8(std::mem::replace(pending, rest)).unwrap_or_default()
}

fn millis(duration: std::time::Duration) -> f64 {
    (duration.as_secs_f64() * 1000.0 * 10.0).round() / 10.0
}

fn other(message: String) -> ModelError {
    ModelError::new(ModelErrorKind::Other, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_that_would_repeat_an_ngram_is_banned() {
        let t = |ids: &[i32]| ids.iter().map(|&i| LlamaToken(i)).collect::<Vec<_>>();
        // "1 2 3" was followed by 4; after "1 2 3" again, 4 would repeat "1 2 3 4".
        assert_eq!(repeats(&t(&[1, 2, 3, 4, 9, 1, 2, 3]), 4), t(&[4]));
        assert!(repeats(&t(&[1, 2, 3, 4, 9, 2, 3]), 4).is_empty());
        assert!(repeats(&t(&[1, 2]), 4).is_empty());
    }

    #[test]
    fn utf8_split_across_tokens_is_held_back() {
        let mut pending = "a☃".as_bytes()[..3].to_vec();
        assert_eq!(take_utf8(&mut pending), "a");
        pending.extend(&"☃".as_bytes()[2..]);
        assert_eq!(take_utf8(&mut pending), "☃");
        assert!(pending.is_empty());
    }
}
