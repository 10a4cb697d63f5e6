import { ASK_AGAIN_AFTER_MS, ServerAnswers, UNANSWERED_FOR_MS } from './server-answers';

describe('ServerAnswers', () => {
  const id = 'server';

  it('counts a server never heard of, or last heard answering, as answering', () => {
    const answers = new ServerAnswers();
    expect(answers.answering(id)).toBe(true);
    answers.answered(id);
    expect(answers.answering(id)).toBe(true);
  });

  it('counts a server that did not answer as not answering until it answers, or for UNANSWERED_FOR_MS at most', () => {
    const answers = new ServerAnswers();
    answers.unanswered(id);
    const now = Date.now();
    expect(answers.answering(id, now)).toBe(false);
    expect(answers.answering(id, now + UNANSWERED_FOR_MS - 1000)).toBe(false);
    expect(answers.answering(id, now + UNANSWERED_FOR_MS + 1000)).toBe(true);
    answers.answered(id);
    expect(answers.answering(id, now)).toBe(true);
    answers.unanswered(id);
    answers.forget(id);
    expect(answers.answering(id)).toBe(true);
  });

  it('keeps the news of the call begun last: a slow call that began earlier and ends later does not replace it', () => {
    const answers = new ServerAnswers();
    const began = Date.now();
    // A call begun at `began` times out only after one begun a second later got an answer.
    answers.answered(id, began + 1000);
    answers.unanswered(id, 'timeout exceeded when trying to connect', began);
    expect(answers.answering(id)).toBe(true);
    expect(answers.lastFailure(id)).toBeUndefined();
    // And the other way round: a late success of an older call does not hide a newer failure.
    answers.unanswered(id, 'Connection terminated unexpectedly', began + 2000);
    answers.answered(id, began + 1500);
    expect(answers.answering(id)).toBe(false);
  });

  it('remembers why a server last did not answer, until it answers', () => {
    const answers = new ServerAnswers();
    expect(answers.lastFailure(id)).toBeUndefined();
    answers.unanswered(id, 'password authentication failed for user "admin"');
    expect(answers.lastFailure(id)).toBe('password authentication failed for user "admin"');
    answers.answered(id);
    expect(answers.lastFailure(id)).toBeUndefined();
  });

  it('has a server asked when its news is missing or old, one question at a time', () => {
    const answers = new ServerAnswers();
    expect(answers.startAsking(id)).toBe(true);
    expect(answers.startAsking(id)).toBe(false);
    answers.unanswered(id);
    answers.doneAsking(id);
    const now = Date.now();
    expect(answers.startAsking(id, now)).toBe(false);
    expect(answers.startAsking(id, now + ASK_AGAIN_AFTER_MS + 1000)).toBe(true);
  });
});
