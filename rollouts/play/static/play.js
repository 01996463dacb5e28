// gamebridge play: the page. It knows no game rule: the server sends the board
// (core's Game.board_view: cells, marks, and which move each cell plays), the
// legal moves and every text; a click posts the move the board says that cell plays.
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var config = null;
  var tab = 'play';
  var session = null;       // the last session view from the server
  var replay = null;        // {file, episodes, data, frame}
  var autoTimer = null;
  var busy = false;
  var renders = 0;          // a counter the tests wait on

  function setBusy(b) {
    busy = b;
    document.body.setAttribute('data-busy', b ? '1' : '0');
  }

  var STORE = 'gamebridge-play-session';   // this tab's game (sessionStorage: one per tab)
  function remember(id) {
    try { if (id) { sessionStorage.setItem(STORE, id); } else { sessionStorage.removeItem(STORE); } }
    catch (e) { /* storage off: no resume */ }
  }
  function remembered() {
    try { return sessionStorage.getItem(STORE); } catch (e) { return null; }
  }

  // While a move or a step waits for the opponent or the model: say so, block input.
  function setPending(text) {
    document.body.classList.toggle('pending', !!text);
    document.body.setAttribute('data-pending', text ? '1' : '0');
    $('typed-move').disabled = !!text;
    $('typed-submit').disabled = !!text;
    $('step').disabled = !!text;
    if (text) {
      $('status').textContent = text;
      $('status').className = 'pending-status';
    }
  }

  function showError(msg) { $('error').textContent = msg || ''; }

  function api(method, path, body) {
    var opts = {method: method, headers: {}};
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    setBusy(true);
    return fetch(path, opts).then(function (r) {
      return r.json().catch(function () { return {detail: r.statusText}; }).then(function (data) {
        setBusy(false);
        if (!r.ok) {
          showError((data && data.detail) || ('HTTP ' + r.status));
          return null;
        }
        showError('');
        return data;
      });
    }, function (err) {
      setBusy(false);
      showError('the server cannot be reached: ' + err);
      return null;
    });
  }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  function gameInfo(name) {
    for (var i = 0; i < config.games.length; i++) {
      if (config.games[i].name === name) { return config.games[i]; }
    }
    return config.games[0];
  }

  // --- setup form ---------------------------------------------------------------------
  var OPPONENT_LABELS = {minimax: 'alpha-beta (minimax)', random: 'random', mcts: 'Monte Carlo tree search (MCTS)'};
  function fillOpponents(g) {
    var sel = $('opponent');
    var keep = sel.value;
    sel.innerHTML = '';
    (g.opponents && g.opponents.length ? g.opponents : config.opponents).forEach(function (o) {
      sel.appendChild(el('option', {value: o}, OPPONENT_LABELS[o] || o));
    });
    if ((g.opponents || []).indexOf(keep) >= 0) { sel.value = keep; }
  }

  function fillSides() {
    var g = gameInfo($('game').value);
    fillOpponents(g);
    var side = $('side');
    var keep = side.value;
    side.innerHTML = '';
    g.players.forEach(function (p, i) { side.appendChild(el('option', {value: String(i)}, p)); });
    if (keep && Number(keep) < g.players.length) { side.value = keep; }
    updateForm();
  }

  function updateForm() {
    var g = gameInfo($('game').value);
    var two = g.players.length > 1;
    var watch = tab === 'watch';
    $('side-label').textContent = watch ? 'The model plays' : 'You play';
    document.querySelectorAll('.play-only').forEach(function (n) { n.hidden = watch || !two; });
    document.querySelectorAll('.watch-only').forEach(function (n) { n.hidden = !watch || !two; });
    var vsModel = two && (watch ? $('watch-other').value : $('other').value) === 'model';
    var needsModel = watch || vsModel;
    document.querySelectorAll('.opponent-fields').forEach(function (n) { n.hidden = vsModel || !two; });
    document.querySelectorAll('.model-fields').forEach(function (n) { n.hidden = !needsModel; });
    document.querySelectorAll('.depth-field').forEach(function (n) { n.hidden = $('opponent').value === 'random'; });
    $('depth-label').textContent = $('opponent').value === 'mcts' ? 'level' : 'depth';
    document.querySelectorAll('.policy-field').forEach(function (n) { n.hidden = $('model').value !== 'scripted'; });
  }

  function setupBody() {
    return {
      game: $('game').value,
      mode: tab === 'watch' ? 'watch' : 'play',
      side: Number($('side').value || 0),
      other: tab === 'watch' ? $('watch-other').value : $('other').value,
      opponent: $('opponent').value,
      depth: Number($('depth').value || 1),
      random_move_prob: Number($('rmp').value || 0),
      seed: Number($('seed').value || 0),
      model: $('model').value,
      policy: $('policy').value
    };
  }

  function newGame(ev) {
    if (ev) { ev.preventDefault(); }
    stopAuto();
    var old = session;
    api('POST', '/api/sessions', setupBody()).then(function (view) {
      if (!view) { return; }
      if (old && old.id) { api('DELETE', '/api/sessions/' + old.id); }
      session = view;
      remember(view.id);
      render();
    });
  }

  // --- tabs ---------------------------------------------------------------------------
  function selectTab(name) {
    tab = name;
    stopAuto();
    document.querySelectorAll('.tab').forEach(function (b) {
      b.classList.toggle('active', b.getAttribute('data-tab') === name);
    });
    $('setup').hidden = name === 'replay';
    $('replay-setup').hidden = name !== 'replay';
    $('game-area').hidden = true;
    document.body.setAttribute('data-tab', name);
    showError('');
    if (name === 'replay') { loadRunList(); } else { updateForm(); }
  }

  // --- drawing ------------------------------------------------------------------------
  // The largest cell (30..60 px, less on a narrow screen) that fits the board in the page.
  function cellSize(board) {
    var labels = board.row_labels && board.row_labels.length ? 48 : 0;
    var room = Math.min(420, document.documentElement.clientWidth - 24 - labels - 6);
    var n = Math.max(board.cols, board.rows, 1);
    return Math.max(18, Math.min(60, Math.floor(room / n) - 3));
  }

  function drawBoard(board, gameName, clickable, boardText, last) {
    var b = $('board');
    b.className = 'board game-' + gameName.replace(/[^a-z0-9_]/gi, '_');
    $('board-wrap').className = 'game-' + gameName.replace(/[^a-z0-9_]/gi, '_');
    b.innerHTML = '';
    var generic = !!board.generic;
    $('board-wrap').hidden = generic;
    $('board-text').hidden = !generic;
    $('board-text').textContent = generic ? (boardText || '') : '';
    var winCells = {};
    (board.highlight || []).forEach(function (rc) { winCells[rc[0] + ',' + rc[1]] = true; });
    var lastCells = {};
    ((last && last.cells) || []).forEach(function (rc) { lastCells[rc[0] + ',' + rc[1]] = true; });
    var size = cellSize(board);
    document.documentElement.style.setProperty('--cell', size + 'px');
    b.style.gridTemplateColumns = 'repeat(' + board.cols + ', ' + size + 'px)';
    for (var r = 0; r < board.rows; r++) {
      for (var c = 0; c < board.cols; c++) {
        var move = clickable ? board.click[r + ',' + c] : undefined;
        var cell = el('button', {type: 'button', 'data-row': String(r), 'data-col': String(c)},
          board.cells[r][c]);
        cell.className = 'cell' + (board.marks[r][c] ? ' mark-' + board.marks[r][c] : '') +
          (lastCells[r + ',' + c] ? ' last' : '') + (winCells[r + ',' + c] ? ' win' : '');
        if (move !== undefined) {
          cell.classList.add('legal');
          cell.setAttribute('data-move', move);
          cell.setAttribute('title', move);
        } else {
          cell.disabled = true;
        }
        b.appendChild(cell);
      }
    }
    var labelW = board.row_labels.length ? 48 : 0;
    document.documentElement.style.setProperty('--label-w', labelW + 'px');
    var rl = $('row-labels');
    rl.innerHTML = '';
    rl.style.gridTemplateRows = 'repeat(' + board.rows + ', ' + (size + 3) + 'px)';
    rl.style.paddingTop = '3px';
    board.row_labels.forEach(function (t) { rl.appendChild(el('span', {}, t)); });
    var cl = $('col-labels');
    cl.innerHTML = '';
    cl.style.gridTemplateColumns = 'repeat(' + board.cols + ', ' + (size + 3) + 'px)';
    cl.style.paddingLeft = '3px';
    board.col_labels.forEach(function (t) { cl.appendChild(el('span', {}, t)); });
    var extra = $('extra-moves');
    extra.innerHTML = '';
    var list = $('legal-list');
    list.innerHTML = '';
    if (clickable) {
      if (generic && board.other_moves.length) {
        extra.appendChild(el('p', {'class': 'meta'}, 'Your legal moves (click one, or type it below):'));
      }
      board.other_moves.forEach(function (m) {
        var btn = el('button', {type: 'button', 'data-move': m, 'class': 'other-move'}, m);
        extra.appendChild(btn);
        list.appendChild(el('option', {value: m}));
      });
    }
    extra.className = generic ? 'generic' : '';
  }

  var YOU = {win: 'you won', loss: 'you lost', draw: 'a draw'};
  function drawReward(target, result, termination, reward, opts) {
    target.innerHTML = '';
    if (!reward) { return; }
    opts = opts || {};
    var head;
    if (opts.yourResult) {
      head = 'Game over: ' + (YOU[opts.yourResult] || opts.yourResult) + ' (' + termination + ')';
    } else {
      head = 'Game over: ' + result + ' (' + termination + ')';
    }
    var whose = opts.rewardOf === 'model' ? "the model's reward " : 'reward ';
    target.appendChild(el('p', {'class': 'result', id: 'result'}, head + ', ' + whose + reward.total.toFixed(3)));
    if (opts.answer) {
      target.appendChild(el('p', {'class': 'answer', id: 'answer'}, 'The answer was ' + opts.answer.toUpperCase() + '.'));
    }
    var t = el('table', {'class': 'reward', id: 'reward-table'});
    var head = el('tr');
    ['component', 'value', 'weight', 'weighted'].forEach(function (h) { head.appendChild(el('th', {}, h)); });
    t.appendChild(head);
    Object.keys(reward.components).forEach(function (k) {
      var tr = el('tr', {'data-component': k});
      var v = reward.components[k], w = reward.weights[k];
      tr.appendChild(el('td', {}, k));
      tr.appendChild(el('td', {}, v.toFixed(3)));
      tr.appendChild(el('td', {}, w === undefined ? '' : w.toFixed(3)));
      tr.appendChild(el('td', {}, w === undefined ? '' : (v * w).toFixed(3)));
      t.appendChild(tr);
    });
    var total = el('tr');
    total.appendChild(el('th', {}, 'total'));
    total.appendChild(el('th', {}, ''));
    total.appendChild(el('th', {}, ''));
    total.appendChild(el('th', {}, reward.total.toFixed(3)));
    t.appendChild(total);
    target.appendChild(t);
  }

  function describeTurn(t) {
    if (t.error) {
      return 'rejected (' + t.error + '): ' + String(t.message || '').split('\n')[0];
    }
    return (t.move === null ? 'moved (hidden until the game ends)' : 'played ' + t.move) +
      (t.opponent_moves && t.opponent_moves.length ?
      '; opponent: ' + t.opponent_moves.join(', ') : '');
  }

  function render() {
    var v = session;
    if (!v) { return; }
    $('game-area').hidden = false;
    $('watch-controls').hidden = v.setup.mode !== 'watch';
    $('replay-controls').hidden = true;
    var players = v.game.players;
    var head = v.game.title + ': ';
    if (v.setup.mode === 'watch') {
      head += v.model + ' plays ' + players[v.seat] + (v.opponent ? ', against ' + v.opponent : '');
    } else {
      head += 'you play ' + players[v.you] + (v.opponent ? ', against ' + (v.opponent === 'you' ? v.model : v.opponent) : '');
    }
    var hl = $('headline');
    hl.textContent = head;
    hl.className = 'game-' + v.game.name.replace(/[^a-z0-9_]/gi, '_');
    if (v.setup.mode === 'play' && players.length > 1 && !v.board.generic) {
      hl.appendChild(document.createTextNode(' '));
      hl.appendChild(el('span', {'class': 'cell swatch mark-p' + v.you, title: 'your pieces'}, players[v.you]));
    }
    setPending(null);
    drawBoard(v.board, v.game.name, v.your_turn, v.board_text, v.last_move);
    $('typed-form').hidden = !v.your_turn;
    $('typed-move').placeholder = v.board.typed ? 'type a word' : 'or type a move';
    var status;
    var lastText = v.last_move && !v.done ? (v.last_move.by === 'model' ? 'The model' : 'The opponent') +
      ' played ' + v.last_move.move + (v.last_move.cells && v.last_move.cells.length ? ' (marked). ' : '. ') : '';
    var onBoard = Object.keys(v.board.click || {}).length > 0;
    if (v.done) { status = 'Game over.'; }
    else if (v.your_turn && v.board.typed) { status = lastText + 'Your move: type a word and press Enter.'; }
    else if (v.your_turn && v.board.generic) { status = lastText + 'Your move: pick one of the legal moves.'; }
    else if (v.your_turn && !onBoard && v.board.other_moves.length) {
      status = lastText + 'No move on the board for you: press ' + v.board.other_moves.join(' or ') + '.';
    }
    else if (v.your_turn) { status = lastText + 'Your move (' + players[v.you] + '): click a highlighted cell.'; }
    else if (v.model_to_move) { status = 'The model is to move: press Step or Auto-play.'; }
    else { status = ''; }
    if (/othello/.test(v.game.name) && !v.board.generic) {
      var count = [0, 0];
      v.board.marks.forEach(function (row) { row.forEach(function (m) {
        if (m === 'p0') { count[0] += 1; } else if (m === 'p1') { count[1] += 1; }
      }); });
      status += (status ? ' ' : '') + 'Discs: ' + players[0] + ' ' + count[0] + ', ' + players[1] + ' ' + count[1] + '.';
    }
    $('status').textContent = status;
    $('status').className = '';
    var seatIsModel = v.setup.mode === 'watch' || v.setup.other === 'model';
    var obsLabel;
    if (v.done) { obsLabel = 'The final observation (what the ' + (seatIsModel ? 'model' : 'seat') + ' reads at the end)'; }
    else if (seatIsModel && v.your_turn) { obsLabel = 'The observation the model read before its last reply'; }
    else if (seatIsModel) { obsLabel = 'The observation the model reads next'; }
    else { obsLabel = 'The observation a model in your seat reads now'; }
    $('observation-label').textContent = obsLabel;
    $('observation').textContent = v.observation;
    var last = v.turns.length ? v.turns[v.turns.length - 1] : null;
    $('reply').textContent = last ? (typeof last.reply === 'string' ? last.reply : JSON.stringify(last.reply)) : '(none yet)';
    $('parsed').textContent = last ? (last.who === 'you' ? 'your move: ' : 'model: ') + describeTurn(last) : '';
    $('parsed').className = last && last.error ? 'bad' : '';
    $('invalid-left').textContent = v.invalid_left + ' of ' + v.max_invalid_moves;
    $('system-prompt').textContent = v.system_prompt;
    var h = $('history');
    h.innerHTML = '';
    v.turns.forEach(function (t) {
      var li = el('li', {}, (t.who === 'you' ? 'you' : 'model') + ' ' +
        JSON.stringify(t.reply) + ' -> ' + describeTurn(t));
      if (t.error) { li.className = 'bad'; }
      h.appendChild(li);
    });
    drawReward($('reward'), v.result, v.termination, v.done ? v.reward : null, {
      yourResult: v.your_result, rewardOf: v.reward_of,
      answer: v.done && v.answer && v.result !== 'win' ? v.answer : null
    });
    document.body.setAttribute('data-session', v.id);
    document.body.setAttribute('data-status', v.done ? 'over' : (v.your_turn ? 'your-turn' : 'model-turn'));
    document.body.setAttribute('data-turns', String(v.turns.length));
    renders += 1;
    document.body.setAttribute('data-renders', String(renders));
    if (v.done) { stopAuto(); }
  }

  // --- playing ------------------------------------------------------------------------
  function play(move) {
    if (!session || busy) { return; }
    var who = session.setup.other === 'model' && session.game.players.length > 1 ? 'the model' : 'the opponent';
    setPending('You played ' + move + '. Waiting for ' + (session.game.players.length > 1 ? who : 'the game') + '…');
    api('POST', '/api/sessions/' + session.id + '/move', {move: move}).then(function (view) {
      if (view) { session = view; render(); } else { render(); }
    });
  }

  function step() {
    if (!session || busy || session.done) { return Promise.resolve(null); }
    setPending('The model is thinking…');
    return api('POST', '/api/sessions/' + session.id + '/step').then(function (view) {
      if (view) { session = view; render(); } else { render(); }
      return view;
    });
  }

  function stopAuto() {
    if (autoTimer !== null) { clearTimeout(autoTimer); autoTimer = null; }
    $('auto').classList.remove('on');
    $('auto').textContent = 'Auto-play';
  }

  function autoLoop() {
    step().then(function (view) {
      if (autoTimer === null) { return; }
      if (!view || view.done) { stopAuto(); return; }
      autoTimer = setTimeout(autoLoop, Number($('speed').value));
    });
  }

  function toggleAuto() {
    if (autoTimer !== null) { stopAuto(); return; }
    $('auto').classList.add('on');
    $('auto').textContent = 'Pause';
    autoTimer = setTimeout(autoLoop, 0);
  }

  // --- replay -------------------------------------------------------------------------
  function loadRunList(select) {
    return api('GET', '/api/runs').then(function (data) {
      if (!data) { return; }
      var s = $('run-file');
      s.innerHTML = '';
      s.appendChild(el('option', {value: ''}, data.files.length ? '(choose a records file)' : '(no runs/*.jsonl yet: run make demo)'));
      data.files.forEach(function (f) { s.appendChild(el('option', {value: f.path}, f.name)); });
      if (select) { s.value = select; }
    });
  }

  function openRun(file, episode) {
    stopAuto();
    return api('GET', '/api/replay?file=' + encodeURIComponent(file)).then(function (data) {
      if (!data) {  // not a records file: the error alone, not over the previous file's board
        replay = null;
        $('game-area').hidden = true;
        $('episode').innerHTML = '';
        return;
      }
      replay = {file: data.file, episodes: data.episodes, data: null, frame: 0};
      var s = $('episode');
      s.innerHTML = '';
      data.episodes.forEach(function (label, i) { s.appendChild(el('option', {value: String(i)}, label)); });
      var i = Math.max(0, Math.min(episode || 0, data.episodes.length - 1));
      s.value = String(i);
      return openEpisode(i);
    });
  }

  function openEpisode(i, frame) {
    return api('GET', '/api/replay?file=' + encodeURIComponent(replay.file) + '&episode=' + i).then(function (data) {
      if (!data) { return; }
      replay.data = data;
      replay.frame = frame || 0;
      showFrame();
    });
  }

  function showFrame() {
    var d = replay.data;
    var n = d.frames.length;
    replay.frame = Math.max(0, Math.min(replay.frame, n - 1));
    var f = d.frames[replay.frame];
    $('game-area').hidden = false;
    $('watch-controls').hidden = true;
    $('replay-controls').hidden = false;
    $('typed-form').hidden = true;
    $('headline').textContent = d.game.title + ': ' + $('episode').options[$('episode').selectedIndex].textContent;
    drawBoard(f.board, d.game.name, false, f.board_text || '', null);
    $('frame-pos').textContent = (replay.frame + 1) + ' / ' + n;
    var status;
    if (f.turn === 0) {
      status = 'Start position.' + (f.opening.length ? ' Opening plies: ' + f.opening.join(', ') + '.' : '') +
        (f.opponent_moves.length ? ' The opponent played first: ' + f.opponent_moves.join(', ') + '.' : '');
    } else {
      status = 'Turn ' + f.turn + ': ' + describeTurn(f) + '.';
    }
    $('status').textContent = status;
    $('observation-label').textContent = f.turn === 0 ? 'The first observation the model read' : 'The observation the model read before this reply';
    var next = replay.frame + 1 < n ? d.frames[replay.frame + 1].observation : d.final_observation;
    $('observation').textContent = f.turn === 0 ? next : f.observation;
    $('reply').textContent = f.turn === 0 ? '(none yet)' : (typeof f.reply === 'string' ? f.reply : JSON.stringify(f.reply));
    $('parsed').textContent = f.turn === 0 ? '' : describeTurn(f);
    $('parsed').className = f.error ? 'bad' : '';
    $('invalid-left').textContent = String(f.invalid_left);
    $('system-prompt').textContent = d.system_prompt;
    var h = $('history');
    h.innerHTML = '';
    d.frames.slice(1).forEach(function (t, i) {
      var li = el('li', {}, JSON.stringify(t.reply) + ' -> ' + describeTurn(t));
      if (t.error) { li.className = 'bad'; }
      if (i + 1 === replay.frame) { li.style.fontWeight = 'bold'; }
      h.appendChild(li);
    });
    $('verified').textContent = d.verified ? 'Replayed through core.Episode: identical to the record.' :
      'Replayed through core.Episode: the replay differs from the record (another opponent or version?).';
    $('verified').className = d.verified ? 'ok' : 'bad';
    var last = replay.frame === n - 1;
    drawReward($('reward'), d.result, d.termination, last ? d.reward : null);
    document.body.setAttribute('data-frame', String(replay.frame));
    document.body.setAttribute('data-frames', String(n));
    document.body.setAttribute('data-status', 'replay');
  }

  function moveFrame(delta) {
    if (!replay || !replay.data) { return; }
    replay.frame += delta;
    showFrame();
  }

  // --- wiring -------------------------------------------------------------------------
  function parseHash() {
    var out = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      var i = kv.indexOf('=');
      if (i > 0) { out[kv.slice(0, i)] = decodeURIComponent(kv.slice(i + 1)); }
      else if (kv) { out[kv] = ''; }
    });
    return out;
  }

  function init() {
    api('GET', '/api/config').then(function (c) {
      if (!c) { return; }
      config = c;
      c.games.forEach(function (g) { $('game').appendChild(el('option', {value: g.name}, g.title)); });
      c.models.forEach(function (m) { $('model').appendChild(el('option', {value: m.id}, m.label)); });
      if (c.default_model) { $('model').value = c.default_model; }  // the model the command line named
      $('depth').max = String(c.max_depth);
      $('policy').value = c.default_policy;
      fillSides();
      $('game').addEventListener('change', fillSides);
      ['other', 'watch-other', 'opponent', 'model'].forEach(function (id) { $(id).addEventListener('change', updateForm); });
      $('setup-form').addEventListener('submit', newGame);
      document.querySelectorAll('.tab').forEach(function (b) {
        b.addEventListener('click', function () { selectTab(b.getAttribute('data-tab')); });
      });
      // Hover: outline every cell the move under the pointer changes (Nim: each stone it takes).
      function preview(ev, on) {
        var cell = ev.target.closest && ev.target.closest('#board [data-move]');
        document.querySelectorAll('#board .cell.preview').forEach(function (c) { c.classList.remove('preview'); });
        if (!on || !cell || !session || !session.effects) { return; }
        (session.effects[cell.getAttribute('data-move')] || []).forEach(function (rc) {
          var c = document.querySelector("#board .cell[data-row='" + rc[0] + "'][data-col='" + rc[1] + "']");
          if (c) { c.classList.add('preview'); }
        });
      }
      $('board').addEventListener('mouseover', function (ev) { preview(ev, true); });
      $('board').addEventListener('mouseleave', function (ev) { preview(ev, false); });
      $('board').addEventListener('click', function (ev) {
        var cell = ev.target.closest('[data-move]');
        if (cell) { play(cell.getAttribute('data-move')); }
      });
      $('extra-moves').addEventListener('click', function (ev) {
        var b = ev.target.closest('[data-move]');
        if (b) { play(b.getAttribute('data-move')); }
      });
      $('typed-form').addEventListener('submit', function (ev) {
        ev.preventDefault();
        var text = $('typed-move').value;
        $('typed-move').value = '';
        if (text.trim()) { play(text); }
      });
      $('step').addEventListener('click', function () { stopAuto(); step(); });
      $('auto').addEventListener('click', toggleAuto);
      $('speed').addEventListener('input', function () { $('speed-value').textContent = $('speed').value + ' ms'; });
      $('load-run').addEventListener('click', function () {
        var file = $('run-path').value.trim() || $('run-file').value;
        if (file) { openRun(file, 0); } else { showError('choose a records file or type its path'); }
      });
      $('run-file').addEventListener('change', function () { if ($('run-file').value) { openRun($('run-file').value, 0); } });
      $('episode').addEventListener('change', function () { openEpisode(Number($('episode').value)); });
      $('first').addEventListener('click', function () { moveFrame(-1e9); });
      $('prev').addEventListener('click', function () { moveFrame(-1); });
      $('next').addEventListener('click', function () { moveFrame(1); });
      $('last').addEventListener('click', function () { moveFrame(1e9); });
      document.addEventListener('keydown', function (ev) {
        if (tab !== 'replay' || ev.target.tagName === 'INPUT') { return; }
        if (ev.key === 'ArrowLeft') { moveFrame(-1); } else if (ev.key === 'ArrowRight') { moveFrame(1); }
      });
      // #replay=FILE&episode=I&frame=J (the HTML report links here), #watch, #play
      var hash = parseHash();
      if (hash.replay !== undefined) {
        selectTab('replay');
        $('run-path').value = hash.replay;
        openRun(hash.replay, Number(hash.episode || 0)).then(function () {
          if (hash.frame && replay && replay.data) { replay.frame = Number(hash.frame); showFrame(); }
          document.body.setAttribute('data-ready', '1');
        });
        return;
      }
      var saved = hash.watch === undefined && hash.play === undefined ? remembered() : null;
      if (saved) {  // a reload: resume this tab's game (the server keeps it until its idle timeout)
        fetch('/api/sessions/' + encodeURIComponent(saved)).then(function (r) {
          return r.ok ? r.json() : null;
        }).catch(function () { return null; }).then(function (view) {
          if (view) {
            selectTab(view.setup.mode === 'watch' ? 'watch' : 'play');
            $('game').value = view.game.name;
            fillSides();
            session = view;
            render();
          } else {
            remember(null);
            selectTab('play');
          }
          document.body.setAttribute('data-ready', '1');
        });
        return;
      }
      selectTab(hash.watch !== undefined ? 'watch' : 'play');
      document.body.setAttribute('data-ready', '1');
    });
  }

  window.addEventListener('resize', function () {
    if (tab !== 'replay' && session) { render(); } else if (replay && replay.data) { showFrame(); }
  });
  // A new #replay=... (another link from a report) opens afresh.
  window.addEventListener('hashchange', function () { location.reload(); });
  init();
})();
